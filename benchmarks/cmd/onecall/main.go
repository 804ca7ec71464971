// Command onecall makes one library's call n times in a loop, for
// valgrind's instruction counts: unlike a timing, a count is the same on
// every run, whatever else the machine is doing. instructions.sh runs it
// twice per library (n and 2n calls) and divides the difference by n, so
// start-up cancels; it then takes off the cost of the empty loop.
//
//	onecall library n [none]
//
// library is empty, floor, delay, next, v7, v5, v4 or k8s; "none" turns
// jitter off. The workload is the speed benchmarks': base 100ms, cap 30s,
// ×2, attempts 1–10 in turn, stateful libraries reset every ten calls.
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	cenkaltiv4 "github.com/cenkalti/backoff/v4"
	cenkaltiv5 "github.com/cenkalti/backoff/v5"
	cenkaltiv7 "github.com/cenkalti/backoff/v7"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/unherd/backoff"
)

const (
	base = 100 * time.Millisecond
	cp   = 30 * time.Second
)

var sink time.Duration

// floorFull is the speed benchmarks' floor: one shift, one draw. It is
// kept out of line, so that the floor pays a call as Value.Delay's body does.
//
//go:noinline
func floorFull(attempt int) time.Duration {
	d := cp
	if n := uint(attempt - 1); n < 63 && base <= cp>>n {
		d = base << n
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// floorNone is the floor without the draw.
//
//go:noinline
func floorNone(attempt int) time.Duration {
	if n := uint(attempt - 1); n < 63 && base <= cp>>n {
		return base << n
	}
	return cp
}

func main() {
	which := os.Args[1]
	n, _ := strconv.Atoi(os.Args[2])
	none := len(os.Args) > 3
	mode, rf := backoff.JitterFull, 0.5
	if none {
		mode, rf = backoff.JitterNone, 0
	}
	caller := struct{ curve backoff.Value }{backoff.Value{BaseDelay: base, MaxDelay: cp, JitterMode: mode}}
	a := 0
	switch which {
	default:
		fmt.Fprintf(os.Stderr, "onecall: unknown library %q\n", which)
		os.Exit(2)
	case "empty":
		for i := 0; i < n; i++ {
			a = a%10 + 1
			sink = time.Duration(a)
		}
	case "floor":
		floor := floorFull
		if none {
			floor = floorNone
		}
		for i := 0; i < n; i++ {
			a = a%10 + 1
			sink = floor(a)
		}
	case "delay":
		for i := 0; i < n; i++ {
			a = a%10 + 1
			sink = caller.curve.Delay(a)
		}
	case "next":
		s := &backoff.Schedule{Curve: caller.curve}
		for i := 0; i < n; i++ {
			if a = a%10 + 1; a == 1 {
				s.Reset()
			}
			sink, _ = s.Next()
		}
	case "v5":
		bo := &cenkaltiv5.ExponentialBackOff{InitialInterval: base, MaxInterval: cp, Multiplier: 2, RandomizationFactor: rf}
		bo.Reset()
		for i := 0; i < n; i++ {
			if a = a%10 + 1; a == 1 {
				bo.Reset()
			}
			sink = bo.NextBackOff()
		}
	case "v4":
		bo := cenkaltiv4.NewExponentialBackOff(cenkaltiv4.WithInitialInterval(base), cenkaltiv4.WithMaxInterval(cp), cenkaltiv4.WithMultiplier(2), cenkaltiv4.WithMaxElapsedTime(0), cenkaltiv4.WithRandomizationFactor(rf))
		for i := 0; i < n; i++ {
			if a = a%10 + 1; a == 1 {
				bo.Reset()
			}
			sink = bo.NextBackOff()
		}
	case "v7":
		bo := &cenkaltiv7.ExponentialBackOff{InitialInterval: base, MaxInterval: cp, Multiplier: 2, RandomizationFactor: rf}
		bo.Reset()
		for i := 0; i < n; i++ {
			if a = a%10 + 1; a == 1 {
				bo.Reset()
			}
			sink = bo.NextBackOff()
		}
	case "k8s":
		var bo wait.Backoff
		for i := 0; i < n; i++ {
			if a = a%10 + 1; a == 1 {
				bo = wait.Backoff{Duration: base, Factor: 2, Jitter: rf, Steps: 1 << 30, Cap: cp}
			}
			sink = bo.Step()
		}
	}
	if sink < 0 { // the last wait is kept, so the calls cannot be optimised away
		fmt.Fprintln(os.Stderr, "onecall: negative wait", sink)
		os.Exit(1)
	}
}
