// Command preview shows what a retry policy does before you ship it: for
// each retry, the interval its wait is drawn from, one draw, the longest the
// waiting can have taken so far, and where the limits end the sequence.
//
//	go run ./cmd/preview                                          # a production default
//	go run ./cmd/preview '1s×1.5 up to 1m, decorrelated jitter, 8 retries'
//	go run ./cmd/preview -seed 7 '100ms, equal jitter, 2m of waiting'
//
// The argument is the policy text backoff.Schedule reads (its String form);
// several arguments are joined with spaces, so the quotes may be left off.
// Text it cannot read prints the parse error and exits with status 2.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/unherd/backoff"
)

// defaultPolicy is a sensible start for a call made on a user's behalf: the
// first retry within 100ms, no wait above 10s, and at most 10 retries and
// 30s of waiting.
const defaultPolicy = "100ms×2 up to 10s, full jitter, 10 retries, 30s of waiting"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: it returns the exit status, 2 for flags or policy
// text it cannot read.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "seed for the draws; 0 draws from math/rand/v2's runtime source")
	rows := fs.Int("n", 12, "retries to show when the policy has no limit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: preview [-seed N] [-n rows] [policy text]\n\nWith no policy, previews %q.\n\n", defaultPolicy)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	text := strings.Join(fs.Args(), " ")
	if text == "" {
		text = defaultPolicy
	}
	var s backoff.Schedule
	if err := s.UnmarshalText([]byte(text)); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *seed != 0 {
		s.Rand = rand.New(rand.NewPCG(*seed, *seed))
	}
	preview(stdout, s, *rows)
	return 0
}

// preview writes the table for s, which has not been used yet.
func preview(w io.Writer, s backoff.Schedule, rows int) {
	fmt.Fprintf(w, "policy: %v\n", s)
	unlimited := s.MaxRetries <= 0 && s.MaxElapsed <= 0
	switch {
	case s.Curve.BaseDelay <= 0 && unlimited:
		fmt.Fprintln(w, "warning: it waits nothing and never gives up: a tight loop against whatever is failing")
	case s.Curve.BaseDelay <= 0:
		fmt.Fprintln(w, "warning: it waits nothing between attempts")
	case unlimited:
		fmt.Fprintln(w, `warning: no limit: it never gives up; add ", N retries" or ", D of waiting"`)
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "retry\twaits between\tone draw\tworst case so far\t")
	var worst time.Duration
	var end string
	for retry := 1; end == ""; retry++ {
		lo, hi := interval(s.Curve, retry)
		switch {
		case s.MaxRetries > 0 && retry > s.MaxRetries:
			end = fmt.Sprintf("ends: %d %s handed out, so Next reports false", s.MaxRetries, plural(s.MaxRetries, "retry", "retries"))
			continue
		case unlimited && retry > rows:
			end = fmt.Sprintf("… and so on, without end: retry %d waits between %v and %v", retry, round(lo), round(hi))
			continue
		}
		worst = min(worst, maxDuration-hi) + hi // saturating
		draw := "refused"
		if d, ok := s.Next(); ok {
			draw = round(d).String()
		} else {
			end = fmt.Sprintf("ends: this draw would take the waiting past %v, so Next reports false", s.MaxElapsed)
		}
		note := ""
		if s.MaxElapsed > 0 && worst > s.MaxElapsed && worst-hi <= s.MaxElapsed {
			note = fmt.Sprintf("← past %v of waiting: the limit may end it here", s.MaxElapsed)
		}
		fmt.Fprintf(tw, "%d\t%v … %v\t%s\t%v\t  %s\n", retry, round(lo), round(hi), draw, round(worst), note)
	}
	tw.Flush()
	fmt.Fprintln(w, end)
	fmt.Fprintf(w, "the draws: %d %s, %v of waiting\n", s.Attempt(), plural(s.Attempt(), "wait", "waits"), round(s.Elapsed()))
	if s.Curve.JitterMode == backoff.JitterDecorrelated {
		fmt.Fprintln(w, "decorrelated: each draw comes from the one before; the intervals shown are the widest each retry can have")
	}
	fmt.Fprintln(w, "under a context deadline, set Schedule.Deadline too: Next then refuses a wait that would end after it")
}

const maxDuration = time.Duration(1<<63 - 1)

// interval is the widest interval retry's wait can come from: Bounds, or
// for the decorrelated loop, where each wait is drawn from
// [base, min(cap, 3×previous)], the interval after the widest previous
// waits, [base, min(cap, base×3^retry)]: Bounds(retry+1) of the curve ×3.
func interval(v backoff.Value, retry int) (lo, hi time.Duration) {
	if v.JitterMode != backoff.JitterDecorrelated {
		return v.Bounds(retry)
	}
	v.Multiplier = 3
	return v.Bounds(retry + 1)
}

// round keeps a duration readable: whole milliseconds from a second up,
// tenths of a millisecond below.
func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Microsecond)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
