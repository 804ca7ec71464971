// Command herd runs the contention simulation of the AWS Architecture Blog
// post "Exponential Backoff And Jitter" (Brooker, 2015) over this package's
// jitter modes, prints its tables as Markdown, and writes docs/jitter.svg.
//
//	go run ./cmd/herd                       # the README's tables and picture
//	go run ./cmd/herd -n 25,100 -trials 100 # quicker
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
	nFlag := flag.String("n", "10,25,50,100,200", "client counts, comma-separated")
	trials := flag.Int("trials", 400, "trials per client count")
	seed := flag.Uint64("seed", 2015, "seed: the output depends only on the flags")
	svg := flag.String("svg", "../docs/jitter.svg", "where to write the picture; empty: nowhere")
	flag.Parse()

	var ns []int
	for _, f := range strings.Split(*nFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("herd: bad -n %q", *nFlag)
		}
		ns = append(ns, n)
	}
	start := time.Now()
	results := benchmarks.Run(ns, *trials, *seed)
	fmt.Print(benchmarks.Tables(results, *trials, *seed))
	if *svg != "" {
		var at100 []benchmarks.Summary
		for _, row := range results {
			if row[0].N == 100 {
				at100 = row
			}
		}
		if at100 == nil {
			at100 = benchmarks.Run([]int{100}, *trials, *seed)[0]
		}
		if err := os.WriteFile(*svg, []byte(benchmarks.SVG(*seed, *trials, at100)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "herd: %d client counts × %d trials × %d strategies in %v\n", len(ns), *trials, len(benchmarks.Strategies), time.Since(start).Round(time.Millisecond))
}
