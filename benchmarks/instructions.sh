#!/usr/bin/env bash
# Instructions per call, counted by valgrind's callgrind: the same on every
# run, unlike a timing on a shared machine. Each library's call runs n and 2n
# times (cmd/onecall); the difference over n is one call plus one turn of the
# loop, and the empty loop's figure is taken off. Needs valgrind.
#
#	./instructions.sh          # full jitter (each library's nearest)
#	./instructions.sh none     # jitter off
set -euo pipefail
cd "$(dirname "$0")"
bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
go build -o "$bin" ./cmd/onecall
n=1000000
count() { # library calls [none]
	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 |
		sed -n 's/.*refs: *//p' | tr -d ,
}
percall() { echo $(( $(count "$1" $((2 * n)) ${2:-}) - $(count "$1" $n ${2:-}) )); }
empty=$(percall empty)
floor=$(( $(percall floor "${1:-}") - empty ))
echo "| call | instructions a call | × the floor |"
echo "|---|--:|--:|"
for lib in floor delay next v7 v5 v4 k8s; do
	c=$floor
	[ $lib = floor ] || c=$(( $(percall $lib "${1:-}") - empty ))
	awk -v lib=$lib -v c=$c -v n=$n -v f=$floor 'BEGIN { printf "| %s | %.1f | ×%.2f |\n", lib, c / n, c / f }'
done
