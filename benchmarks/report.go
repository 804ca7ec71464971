package benchmarks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/unherd/backoff"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

// Tables formats Run's results as Markdown: work and completion for every
// client count, then every measure at the largest count up to 100.
func Tables(results [][]Summary, trials int, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Model: AWS \"Exponential Backoff And Jitter\" (2015); base %v, cap %v, additive and symmetric jitter %v; %d trials per client count, seed %d.\n\n", HerdBase, HerdCap, AdditiveJitter, trials, seed)

	// table writes one row per strategy and one column per client count.
	table := func(title string, cell func(Summary) string) {
		fmt.Fprintf(&b, "%s\n\n| strategy |", title)
		for _, row := range results {
			fmt.Fprintf(&b, " N=%d |", row[0].N)
		}
		b.WriteString("\n|---|")
		for range results {
			b.WriteString("--:|")
		}
		b.WriteString("\n")
		for s := range Strategies {
			fmt.Fprintf(&b, "| %s |", results[0][s].Strategy)
			for _, row := range results {
				fmt.Fprintf(&b, " %s |", cell(row[s]))
			}
			b.WriteString("\n")
		}
	}
	table("Work: conditional writes that reached the server, mean per trial (× full jitter's, paired)",
		func(s Summary) string { return fmt.Sprintf("%.0f (×%.2f)", s.Work, s.WorkVsFull) })
	b.WriteString("\n")
	table("Completion: when the last client has its success, ms, mean per trial (× full jitter's, paired)",
		func(s Summary) string { return fmt.Sprintf("%s (×%.2f)", ms(s.Completion), s.TimeVsFull) })

	focus := results[0]
	for _, row := range results {
		if row[0].N <= 100 {
			focus = row
		}
	}
	fmt.Fprintf(&b, "\nAt N=%d: herd peak = the most retry-k writes reaching the server within any %v, mean per trial\n\n", focus[0].N, herdWindow)
	b.WriteString("| strategy | work | completion (ms) | herd peak, retry 1 | retry 2 | retry 3 |\n|---|--:|--:|--:|--:|--:|\n")
	for _, s := range focus {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.1f | %.1f | %.1f |\n", s.Strategy, s.Work, ms(s.Completion), s.Herd[0], s.Herd[1], s.Herd[2])
	}
	return b.String()
}

// SVG draws docs/jitter.svg: on the left, the waits each mode draws over
// the first attempts of the simulation's curve (a seeded sample, over the
// interval Value.Bounds reports); on the right, the work and completion of
// every strategy at N = 100, from at100 (Run's row for N = 100 over trials). The output
// depends only on its arguments.
func SVG(seed uint64, trials int, at100 []Summary) string {
	const (
		width, height = 1200, 440
		attempts      = 10
		samples       = 40
		panelW        = 112 // one mode's panel on the left
		top, bottom   = 60, 350
	)
	modes := []backoff.JitterMode{backoff.JitterFull, backoff.JitterEqual, backoff.JitterDecorrelated, backoff.JitterAdditive, backoff.JitterSymmetric, backoff.JitterNone}
	colour := map[string]string{
		"no backoff": "#7f7f7f", "none": "#d62728", "full": "#1f77b4",
		"equal": "#ff7f0e", "decorrelated": "#2ca02c", "additive": "#9467bd",
		"symmetric": "#8c564b",
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	p(`<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	p(`<text x="20" y="22" font-size="14" font-weight="bold">Waits each mode draws, attempts 1–%d (base %v, cap %v, log scale)</text>`+"\n", attempts, HerdBase, HerdCap)

	// Left: log-scale waits from 0.5ms to 4s.
	lo, hi := math.Log10(0.5), math.Log10(4000)
	y := func(d time.Duration) float64 {
		msf := math.Max(float64(d)/float64(time.Millisecond), 0.5)
		return bottom - (math.Log10(msf)-lo)/(hi-lo)*(bottom-top)
	}
	for _, tick := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		p(`<line x1="50" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", 50+panelW*len(modes), y(tick), y(tick))
		p(`<text x="46" y="%.1f" text-anchor="end">%v</text>`+"\n", y(tick)+4, tick)
	}
	for i, mode := range modes {
		x0 := 50.0 + float64(i*panelW)
		x := func(a int) float64 { return x0 + 8 + float64(a-1)*float64(panelW-16)/float64(attempts-1) }
		v := backoff.Value{BaseDelay: HerdBase, MaxDelay: HerdCap, Jitter: AdditiveJitter, JitterMode: mode}
		p(`<text x="%.1f" y="%d" text-anchor="middle" font-weight="bold" fill="%s">%s</text>`+"\n", x0+float64(panelW)/2, top-12, colour[mode.String()], mode)
		if mode != backoff.JitterDecorrelated { // its interval depends on the previous wait drawn
			for a := 1; a <= attempts; a++ {
				l, h := v.Bounds(a)
				p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-opacity="0.25" stroke-width="7"/>`+"\n", x(a), x(a), y(l), y(h), colour[mode.String()])
			}
		}
		r := rand.New(rand.NewPCG(seed, uint64(mode)))
		for range samples {
			s := backoff.Schedule{Curve: v, Rand: r}
			for a := 1; a <= attempts; a++ {
				d, _ := s.Next()
				jitterX := (r.Float64() - 0.5) * 5
				p(`<circle cx="%.1f" cy="%.1f" r="1.3" fill="%s" fill-opacity="0.5"/>`+"\n", x(a)+jitterX, y(d), colour[mode.String()])
			}
		}
		p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#555">attempt 1–%d</text>`+"\n", x0+float64(panelW)/2, bottom+16, attempts)
	}

	// Right: work and completion at N = 100, as bars.
	x0 := 50.0 + float64(panelW*len(modes)) + 40
	p(`<text x="%.1f" y="22" font-size="14" font-weight="bold">100 clients contending, mean of %d trials</text>`+"\n", x0, trials)
	var maxWork float64
	var maxTime time.Duration
	for _, s := range at100 {
		maxWork = math.Max(maxWork, s.Work)
		maxTime = max(maxTime, s.Completion)
	}
	barW := float64(width) - x0 - 130
	for block, title := range []string{"work: writes reaching the server", "completion: ms until the last success"} {
		by := float64(top + block*160)
		p(`<text x="%.1f" y="%.1f" fill="#333">%s</text>`+"\n", x0, by-8, title)
		for i, s := range at100 {
			value, label := s.Work/maxWork, fmt.Sprintf("%.0f", s.Work)
			if block == 1 {
				value, label = float64(s.Completion)/float64(maxTime), ms(s.Completion)
			}
			yy := by + float64(i)*19
			p(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0+78, yy+12, s.Strategy)
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="14" fill="%s"/>`+"\n", x0+82, yy+2, value*barW, colour[s.Strategy])
			p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", x0+86+value*barW, yy+12, label)
		}
	}
	p(`<text x="20" y="%d" fill="#555">Regenerate: cd benchmarks &amp;&amp; go run ./cmd/herd (seed %d). Dots: seeded draws from Schedule.Next (below 0.5ms drawn at the bottom); bands: Value.Bounds.</text>`+"\n", height-14, seed)
	b.WriteString("</svg>\n")
	return b.String()
}

// RATable formats RunRA's results for one configuration as Markdown: the
// means, and each as a multiple of obeying exactly (paired), with the 95%
// confidence interval of the multiple when ci is set.
func RATable(cfg RAConfig, sums []RASummary, trials int, seed uint64, ci bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v; %d trials, seed %d.\n\n", cfg, trials, seed)
	b.WriteString("| client's strategy | peak: requests in any 10ms after the first expiry | × | 429s | × | last success | × |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|\n")
	x := func(v, half float64) string {
		if ci {
			return fmt.Sprintf("%.3f ± %.3f", v, half)
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %.1f | %s | %.0f | %s | %s | %s |\n", s.Strategy,
			s.Peak, x(s.PeakX, s.PeakCI), s.Rejected, x(s.RejectedX, s.RejectedCI),
			s.Completion.Round(100*time.Millisecond), x(s.TimeX, s.TimeCI))
	}
	return b.String()
}

// RASVG draws docs/retry-after.svg: for each strategy, the requests
// reaching the server per 100ms over time, in one seeded trial of cfg,
// against the server's capacity. The output depends only on its arguments.
func RASVG(cfg RAConfig, caption string, sts []RAStrategy, seed uint64, span time.Duration) string {
	const (
		width, rowH    = 1080, 64
		left, right    = 190, 20
		top            = 56
		bucket         = 100 * time.Millisecond
		capacityColour = "#d62728"
	)
	height := top + rowH*len(sts) + 40
	buckets := int(span / bucket)
	perBucket := cfg.Capacity * bucket.Seconds() // what the server serves per bucket, past its burst
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	p(`<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	p(`<text x="20" y="22" font-size="14" font-weight="bold">Requests reaching the server per %v, one trial: %d clients, capacity %.0f/s</text>`+"\n", bucket, cfg.N, cfg.Capacity)
	p(`<text x="20" y="40" fill="#555">%s. Bars are clipped at 10× capacity; the red line is capacity (%.0f per %v).</text>`+"\n", esc(caption), perBucket, bucket)
	plotW := float64(width - left - right)
	xOf := func(i int) float64 { return left + float64(i)*plotW/float64(buckets) }
	for i, st := range sts {
		counts := make([]int, buckets)
		for _, a := range RAArrivals(cfg, st, seed, 0) {
			if k := int(a / bucket); k < buckets {
				counts[k]++
			}
		}
		y0 := float64(top + (i+1)*rowH - 6) // the row's baseline
		yOf := func(n float64) float64 { return y0 - math.Min(n/(10*perBucket), 1)*float64(rowH-12) }
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y0-rowH/2+10, esc(st.Name))
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", left, width-right, y0, y0)
		for k, n := range counts {
			if n > 0 {
				p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#1f77b4"/>`+"\n", xOf(k), yOf(float64(n)), plotW/float64(buckets), y0-yOf(float64(n)))
			}
		}
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n", left, width-right, yOf(perBucket), yOf(perBucket), capacityColour)
	}
	axis := float64(top + rowH*len(sts))
	for s := time.Duration(0); s <= span; s += 10 * time.Second {
		x := xOf(int(s / bucket))
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%v</text>`+"\n", x, axis+14, s)
	}
	p(`<text x="20" y="%d" fill="#555">Regenerate: cd benchmarks &amp;&amp; go run ./cmd/herd -retry-after (seed %d).</text>`+"\n", height-8, seed)
	b.WriteString("</svg>\n")
	return b.String()
}

// esc escapes text for SVG.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
