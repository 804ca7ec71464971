// Command speedtable reads `go test -bench` output for this module's speed
// benchmarks on standard input and prints the speed tables: the median
// ns/op of each library's call, and its multiple of the floor: the median,
// over the rounds, of its ns/op over the floor's in the same round. The
// input is rounds of the whole suite, each benchmark once a round.
// (benchstat reports the same medians, with their spread.)
//
// It measures nothing itself: it only reads what the benchmarks printed.
// testdata/bench.txt is one stored run; to measure on your machine, run the
// benchmarks first (benchmarks/README.md gives the command).
//
//	go run ./cmd/speedtable < testdata/bench.txt
//	go run ./cmd/speedtable -loops < testdata/loops.txt   # the retry loops
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"slices"
	"strconv"
)

var line = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op\s+([\d.]+) allocs/op)?`)

type sample struct{ ns, bytes, allocs []float64 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	loops := flag.Bool("loops", false, "print the retry-loop tables (BenchmarkRetryHappy, BenchmarkRetryTwoRetries)")
	flag.Parse()
	samples := map[string]*sample{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s := samples[m[1]]
		if s == nil {
			s = &sample{}
			samples[m[1]] = s
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		s.ns = append(s.ns, ns)
		if m[3] != "" {
			b, _ := strconv.ParseFloat(m[3], 64)
			a, _ := strconv.ParseFloat(m[4], 64)
			s.bytes, s.allocs = append(s.bytes, b), append(s.allocs, a)
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	if *loops {
		printLoops(samples)
		return
	}
	ns := func(name string) float64 {
		if s := samples[name]; s != nil {
			return median(s.ns)
		}
		return -1
	}
	// cell is the median ns/op of key in group and its multiple of the
	// floor: the median over rounds of key's ns/op over the floor's in the
	// same round, which a noisy machine disturbs less than a ratio of
	// medians does.
	cell := func(group, key string) string {
		v := ns(group + "/" + key)
		if v < 0 {
			return "–"
		}
		xs, fs := samples[group+"/"+key].ns, samples[group+"/floor"].ns
		var ratios []float64
		for i := range min(len(xs), len(fs)) {
			ratios = append(ratios, xs[i]/fs[i])
		}
		if v >= 1000 {
			return fmt.Sprintf("%.2f µs (×%.0f)", v/1000, median(ratios))
		}
		return fmt.Sprintf("%.1f (×%.2f)", v, median(ratios))
	}
	rows := []struct{ key, label string }{
		{"floor", "floor: one shift, one draw"},
		{"unherd-Value.Delay", "**unherd/backoff `Value.Delay`**"},
		{"unherd-Schedule.Next", "**unherd/backoff `Schedule.Next`**"},
		{"cenkalti-v7", "cenkalti/backoff/v7 `NextBackOff`"},
		{"cenkalti-v5", "cenkalti/backoff/v5 `NextBackOff`"},
		{"cenkalti-v4", "cenkalti/backoff/v4 `NextBackOff`"},
		{"k8s-wait", "k8s.io/apimachinery `wait.Backoff.Step`"},
		{"jpillora", "jpillora/backoff `ForAttempt`"},
		{"sethvargo", "sethvargo/go-retry `Next`"},
		{"avast-v5", "avast/retry-go/v5 `FullJitterBackoffDelay`, `BackOffDelay`"},
		{"aws-v2", "aws-sdk-go-v2 `ExponentialJitterBackoff`"},
		{"retryablehttp-LinearJitter", "go-retryablehttp `LinearJitterBackoff`"},
		{"retryablehttp-Default", "go-retryablehttp `DefaultBackoff`"},
	}
	fmt.Println("Through one func value (the closure harness):")
	fmt.Println()
	fmt.Println("| library | full jitter, ns/op | in parallel | jitter off, ns/op | in parallel | allocs/op (B/op) |")
	fmt.Println("|---|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		s := samples["Full/"+r.key]
		if s == nil {
			s = samples["None/"+r.key]
		}
		allocs := "–"
		if s != nil && len(s.allocs) > 0 {
			allocs = fmt.Sprintf("%.0f (%.0f)", median(s.allocs), median(s.bytes))
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.label, cell("Full", r.key), cell("FullParallel", r.key), cell("None", r.key), cell("NoneParallel", r.key), allocs)
	}
	fmt.Println()
	fmt.Println("Called directly, as users call each library (the floor inlined whole):")
	fmt.Println()
	fmt.Println("| library | full jitter, ns/op | jitter off, ns/op |")
	fmt.Println("|---|--:|--:|")
	for _, r := range rows {
		if samples["DirectFull/"+r.key] == nil && samples["DirectNone/"+r.key] == nil {
			continue
		}
		fmt.Printf("| %s | %s | %s |\n", r.label, cell("DirectFull", r.key), cell("DirectNone", r.key))
	}
	fmt.Println()
	fmt.Println("| `Value.Delay`, multiplier | attempt 7, ns/op | attempt 1<<40, ns/op | ratio |")
	fmt.Println("|---|--:|--:|--:|")
	for _, m := range []string{"2", "1.5", "1.0001"} {
		a, b := ns("Attempt/mult="+m+"/attempt=7"), ns("Attempt/mult="+m+"/attempt=1099511627776")
		fmt.Printf("| %s | %.1f | %.1f | ×%.2f |\n", m, a, b, b/a)
	}
}

// printLoops prints the retry-loop tables: the happy path, and the cost of
// one retry with no wait, (TwoRetries − Happy) / 2 in each round, as the
// median over rounds. Ratios are to retry.Do's in the same round.
func printLoops(samples map[string]*sample) {
	rows := []struct{ key, label string }{
		{"direct", "the operation, called directly"},
		{"unherd-retry.Do", "**unherd/backoff `retry.Do`**"},
		{"unherd-retry.Do-Budget", "unherd/backoff `retry.Do` with a `Budget`"},
		{"avast-v5.Retrier.Do", "avast/retry-go/v5 `Retrier.Do` (reused)"},
		{"sethvargo.Do", "sethvargo/go-retry `Do`"},
		{"cenkalti-v7.Retry", "cenkalti/backoff/v7 `Retry`"},
		{"failsafe-go.Run", "failsafe-go `Run` (executor reused)"},
	}
	get := func(group, key string) *sample { return samples[group+"/"+key] }
	perRetry := func(key string) (ns, allocs []float64) {
		h, r := get("RetryHappy", key), get("RetryTwoRetries", key)
		if h == nil || r == nil {
			return nil, nil
		}
		for i := range min(len(h.ns), len(r.ns)) {
			ns = append(ns, (r.ns[i]-h.ns[i])/2)
		}
		for i := range min(len(h.allocs), len(r.allocs)) {
			allocs = append(allocs, (r.allocs[i]-h.allocs[i])/2)
		}
		return ns, allocs
	}
	ours, oursRetry := get("RetryHappy", "unherd-retry.Do"), []float64(nil)
	oursRetry, _ = perRetry("unherd-retry.Do")
	// medianRatio is the median, over the rounds, of xs over base.
	medianRatio := func(xs, base []float64) float64 {
		var rs []float64
		for i := range min(len(xs), len(base)) {
			rs = append(rs, xs[i]/base[i])
		}
		return median(rs)
	}
	ratio := func(xs, base []float64) string {
		if min(len(xs), len(base)) == 0 {
			return ""
		}
		return fmt.Sprintf(" (×%.2f)", medianRatio(xs, base))
	}
	fmt.Println("| call | happy path, ns/op (× retry.Do's) | allocs/op (B/op) | one retry with no wait, ns (× retry.Do's) | allocs per retry |")
	fmt.Println("|---|--:|--:|--:|--:|")
	for _, r := range rows {
		h := get("RetryHappy", r.key)
		if h == nil {
			continue
		}
		happy := fmt.Sprintf("%.1f", median(h.ns))
		if ours != nil && r.key != "unherd-retry.Do" {
			happy += ratio(h.ns, ours.ns)
		}
		allocs := "–"
		if len(h.allocs) > 0 {
			allocs = fmt.Sprintf("%.0f (%.0f)", median(h.allocs), median(h.bytes))
		}
		retryNs, retryAllocs := perRetry(r.key)
		retry, retryA := "–", "–"
		if len(retryNs) > 0 {
			retry = fmt.Sprintf("%.1f", median(retryNs))
			if r.key != "unherd-retry.Do" {
				retry += ratio(retryNs, oursRetry)
			}
		}
		if len(retryAllocs) > 0 {
			retryA = fmt.Sprintf("%.1f", median(retryAllocs))
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.label, happy, allocs, retry, retryA)
	}
	if c := samples["Clock"]; c != nil && ours != nil {
		fmt.Printf("\nOne `time.Now`, measured in the same rounds: %.1f ns, ×%.2f of `retry.Do`'s happy path, which reads it once for Elapsed and the deadline rule.\n", median(c.ns), medianRatio(c.ns, ours.ns))
	}

}
