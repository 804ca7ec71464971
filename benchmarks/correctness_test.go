package benchmarks

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// A hostile configuration, and how many attempts to ask of it.
type hostile struct {
	Name     string
	Config   Config
	Attempts int
}

var hostiles = []hostile{
	{"100ms cap 30s", Config{Base: 100 * time.Millisecond, Cap: 30 * time.Second}, 10000},
	{"1s no cap", Config{Base: time.Second}, 200},
	{"base = cap = MaxInt64", Config{Base: math.MaxInt64, Cap: math.MaxInt64}, 100},
	{"multiplier NaN", Config{Base: 100 * time.Millisecond, Cap: 30 * time.Second, Multiplier: math.NaN(), SetMult: true}, 100},
	{"multiplier 0", Config{Base: 100 * time.Millisecond, Cap: 30 * time.Second, Multiplier: 0, SetMult: true}, 100},
	{"multiplier -2", Config{Base: 100 * time.Millisecond, Cap: 30 * time.Second, Multiplier: -2, SetMult: true}, 100},
	{"multiplier 0.5", Config{Base: 100 * time.Millisecond, Cap: 30 * time.Second, Multiplier: 0.5, SetMult: true}, 100},
	{"multiplier +Inf", Config{Base: 100 * time.Millisecond, Cap: 30 * time.Second, Multiplier: math.Inf(1), SetMult: true}, 100},
	{"base -1s", Config{Base: -time.Second, Cap: 30 * time.Second}, 100},
}

// tally is what one library did over one or more configurations.
type tally struct {
	waits, negative, aboveCap, panics, hangs int
	atCap                                    int    // jittered waits exactly at the cap: jitter lost
	first                                    string // the first misbehaviour seen
	skipped                                  []string
}

func (t *tally) bad(what string) {
	if t.first == "" {
		t.first = what
	}
}

func (t *tally) add(o tally) {
	t.waits += o.waits
	t.negative += o.negative
	t.aboveCap += o.aboveCap
	t.panics += o.panics
	t.hangs += o.hangs
	t.atCap += o.atCap
	if t.first == "" {
		t.first = o.first
	}
	t.skipped = append(t.skipped, o.skipped...)
}

// runPeer asks p for h.Attempts waits of a fresh sequence, recovering
// panics and abandoning a call that takes more than a second.
func runPeer(t *testing.T, p Peer, h hostile) tally {
	var r tally
	if h.Config.SetMult && !p.Multiplier {
		r.skipped = append(r.skipped, h.Name)
		return r
	}
	check := func(attempt int, d time.Duration) {
		r.waits++
		switch {
		case d < 0:
			r.negative++
			r.bad(fmt.Sprintf("%s: attempt %d waits %v", h.Name, attempt, d))
		case h.Config.Cap > 0 && d > h.Config.Cap:
			r.aboveCap++
			r.bad(fmt.Sprintf("%s: attempt %d waits %v", h.Name, attempt, d))
		case h.Config.Cap > 0 && d == h.Config.Cap && p.Jitter != "none":
			r.atCap++
		}
	}
	if p.Run != nil {
		var waits []time.Duration
		func() {
			defer func() {
				if e := recover(); e != nil {
					r.panics++
					r.bad(fmt.Sprintf("%s: panic %v", h.Name, e))
				}
			}()
			waits = p.Run(t, h.Config, h.Attempts)
		}()
		for i, d := range waits {
			check(i+1, d)
		}
		return r
	}

	type result struct {
		d     time.Duration
		panic any
	}
	results := make(chan result, 64)
	go func() {
		defer close(results)
		defer func() {
			if e := recover(); e != nil {
				results <- result{panic: e}
			}
		}()
		next := p.New(h.Config)
		for a := 1; a <= h.Attempts; a++ {
			results <- result{d: next(a)}
		}
	}()
	timeout := time.NewTimer(time.Second)
	defer timeout.Stop()
	for attempt := 1; ; attempt++ {
		timeout.Reset(time.Second)
		select {
		case res, ok := <-results:
			if !ok {
				return r
			}
			if res.panic != nil {
				r.panics++
				r.bad(fmt.Sprintf("%s: attempt %d panics: %v", h.Name, attempt, res.panic))
				return r
			}
			check(attempt, res.d)
		case <-timeout.C:
			r.hangs++
			r.bad(fmt.Sprintf("%s: attempt %d does not return", h.Name, attempt))
			return r // the goroutine is abandoned
		}
	}
}

// TestCorrectness prints, for every library, what it does over the hostile
// configurations, and fails if this package shows anything but zeros:
//
//	go test -run TestCorrectness -v
func TestCorrectness(t *testing.T) {
	var b strings.Builder
	b.WriteString("| library | jitter | waits | negative | above cap | panics | hangs | first misbehaviour | jittered waits exactly at the cap | not asked (API has no such input) |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|---|--:|---|\n")
	var detail strings.Builder
	detail.WriteString("| library | configuration | waits | negative | above cap | panics | hangs | first misbehaviour |\n|---|---|--:|--:|--:|--:|--:|---|\n")
	for _, p := range peers {
		var all tally
		for _, h := range hostiles {
			r := runPeer(t, p, h)
			all.add(r)
			if len(r.skipped) == 0 {
				fmt.Fprintf(&detail, "| %s | %s | %d | %d | %d | %d | %d | %s |\n", p.Name, h.Name, r.waits, r.negative, r.aboveCap, r.panics, r.hangs, orDash(r.first))
			}
		}
		skipped := strings.Join(all.skipped, ", ")
		if len(all.skipped) > 0 && !p.Multiplier {
			skipped = "the multiplier rows" // it takes no multiplier at all
		}
		if p.Fixed != "" {
			skipped = strings.TrimPrefix(skipped+"; fixed: "+p.Fixed, "; ")
		}
		atCap := "–"
		if p.Jitter != "none" {
			atCap = fmt.Sprint(all.atCap)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s | %s | %s |\n", p.Name, p.Jitter, all.waits, all.negative, all.aboveCap, all.panics, all.hangs, orDash(all.first), atCap, orDash(skipped))
		if strings.HasPrefix(p.Name, "unherd/backoff") && (all.negative+all.aboveCap+all.panics+all.hangs > 0 || len(all.skipped) > 0) {
			t.Errorf("%s misbehaved: %d negative, %d above cap, %d panics, %d hangs; first: %s", p.Name, all.negative, all.aboveCap, all.panics, all.hangs, all.first)
		}
	}
	t.Logf("configurations: %s", configList())
	fmt.Println(b.String())
	if testing.Verbose() {
		fmt.Println(detail.String())
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func configList() string {
	var names []string
	for _, h := range hostiles {
		names = append(names, fmt.Sprintf("%s (attempts 1–%d)", h.Name, h.Attempts))
	}
	return strings.Join(names, "; ")
}
