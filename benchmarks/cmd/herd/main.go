// Command herd runs this module's two herd simulations and prints their
// tables as Markdown; each writes its picture.
//
// The contention model is that of the AWS Architecture Blog post
// "Exponential Backoff And Jitter" (Brooker, 2015), over this package's
// jitter modes; with -caps, how its cap decides the work at scale. The
// Retry-After model is a server at capacity telling its clients when to
// come back, and what each way of obeying does to it.
//
//	go run ./cmd/herd                 # the contention tables and docs/jitter.svg
//	go run ./cmd/herd -caps           # work against the cap at N=1,000, and a cap that grows with N
//	go run ./cmd/herd -retry-after    # the Retry-After tables and docs/retry-after.svg
//	go run ./cmd/herd -n 25,100 -trials 100 -svg ''   # quicker
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/backoff/benchmarks"
)

func main() {
	nFlag := flag.String("n", "", "client counts, comma-separated (default: each part's own)")
	trials := flag.Int("trials", 0, "trials per configuration (default: each part's own)")
	seed := flag.Uint64("seed", 2015, "seed: the output depends only on the flags")
	svg := flag.String("svg", "", "where to write the picture; empty: the part's file in ../docs; - for nowhere")
	caps := flag.Bool("caps", false, "the contention model at scale: work and completion against the cap")
	retryAfter := flag.Bool("retry-after", false, "the Retry-After model instead of the contention model")
	flag.Parse()

	ns := func(def string) []int {
		s := def
		if *nFlag != "" {
			s = *nFlag
		}
		var out []int
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				log.Fatalf("herd: bad -n %q", s)
			}
			out = append(out, n)
		}
		return out
	}
	trialsOr := func(def int) int {
		if *trials > 0 {
			return *trials
		}
		return def
	}
	write := func(def, content string) {
		path := *svg
		if path == "" {
			path = def
		}
		if path == "-" {
			return
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	start := time.Now()
	switch {
	case *retryAfter:
		retryAfterPart(ns("100,1000,10000"), trialsOr(200), *seed, write)
	case *caps:
		capsPart(trialsOr(100), *seed)
	default:
		t := trialsOr(benchmarks.HerdTrials)
		results := benchmarks.Run(ns("10,25,50,100,200,500,1000"), t, *seed)
		fmt.Print(benchmarks.Tables(results, t, *seed))
		var at100 []benchmarks.Summary
		for _, row := range results {
			if row[0].N == 100 {
				at100 = row
			}
		}
		if at100 == nil {
			at100 = benchmarks.Run([]int{100}, t, *seed)[0]
		}
		write("../docs/jitter.svg", benchmarks.SVG(*seed, t, at100))
	}
	fmt.Fprintf(os.Stderr, "herd: done in %v\n", time.Since(start).Round(time.Millisecond))
}

// capsPart prints, at N = 1,000, full and equal jitter's work and
// completion against the cap; then, for a cap of N × 20ms (N times the
// two message delays a success holds the row for), every mode against full
// jitter as N grows.
func capsPart(trials int, seed uint64) {
	fmt.Print(benchmarks.CapTable(1000, benchmarks.SweepCaps, trials, seed))
	fmt.Println()
	fmt.Print(benchmarks.GrowingCapTable([]int{100, 200, 500, 1000, 2000}, benchmarks.SuccessTime, trials, seed))
}

// retryAfterPart prints the Retry-After tables for each client count and
// form, and writes the picture for N = 1,000.
func retryAfterPart(ns []int, trials int, seed uint64, write func(string, string)) {
	for _, cfg := range benchmarks.RAConfigs(ns) {
		t := trials
		if cfg.N >= 10000 {
			t = max(trials/10, 4) // fewer at 10,000 clients: the table gives each ratio its 95% CI
		}
		fmt.Println(benchmarks.RATable(cfg, benchmarks.RunRA(cfg, benchmarks.RAStrategies, t, seed), t, seed, cfg.N >= 10000))
	}
	write("../docs/retry-after.svg", benchmarks.RASVG(benchmarks.RAPicture, benchmarks.RAPictureCaption, benchmarks.RAPictured(), seed, benchmarks.RAPictureSpan))
}
