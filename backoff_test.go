package backoff

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Hostile values for every field, shared by the sweeps below.
var (
	hostileDurations = []time.Duration{
		math.MinInt64, math.MinInt64 + 1, -time.Hour, -1, 0, 1, 2, 3,
		time.Millisecond, 100 * time.Millisecond, time.Second, 30 * time.Second,
		1 << 53, 1<<53 + 1, 1<<62 - 1, 1 << 62, 1<<62 + 1,
		math.MaxInt64 / 3, math.MaxInt64/3 + 1, math.MaxInt64 - 1024, math.MaxInt64 - 1, math.MaxInt64,
	}
	hostileFloats = []float64{
		math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -2, -1,
		math.SmallestNonzeroFloat64, 0x1p-1022, 0.5, 0.999999, 1, math.Nextafter(1, 2),
		1.0001, 1.5, 2, 3, 4, 10, 1 << 62, math.MaxFloat64,
	}
	hostileAttempts = []int{
		math.MinInt, -1, 0, 1, 2, 7, 34, 35, 36, 37, 62, 63, 64, 65,
		1 << 40, math.MaxInt - 1, math.MaxInt,
	}
	definedModes = []JitterMode{JitterFull, JitterEqual, JitterDecorrelated, JitterAdditive, JitterNone, JitterSymmetric}
	allModes     = append(definedModes[:len(definedModes):len(definedModes)], 6, 255) // and two this package does not define
)

// grids runs the hostile grids whole: TestValueHostile and
// TestPolicyTextRoundTrip, about 4 million configurations, which take
// seconds. Without it each checks one configuration in 16, a stride that
// walks every row of each axis; the fuzzers cover the space between. CI
// runs them whole: go test -run 'Hostile|RoundTrip' . -grids
var grids = flag.Bool("grids", false, "check the hostile grids whole, not one configuration in 16")

// sample returns a func that reports true for one call in 16, or for every
// call with -grids.
func sample() func() bool {
	n := 0
	return func() bool { n++; return *grids || n%16 == 1 }
}

// ceilingOf is the bound no wait may pass for a MaxDelay.
func ceilingOf(maxDelay time.Duration) time.Duration {
	if maxDelay <= 0 {
		return math.MaxInt64
	}
	return maxDelay
}

func TestNormalMultiplier(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{math.NaN(), 2},
		{math.Inf(-1), 2},
		{-2, 2},
		{0, 2},
		{math.Copysign(0, -1), 2},
		{math.SmallestNonzeroFloat64, 2},
		{0.5, 2},
		{math.Nextafter(1, 0), 2},
		{1, 1},
		{math.Nextafter(1, 2), math.Nextafter(1, 2)},
		{1.5, 1.5},
		{2, 2},
		{1e300, 1e300},
		{math.Inf(1), math.Inf(1)},
	}
	for _, tt := range tests {
		if got := NormalMultiplier(tt.in); got != tt.want {
			t.Errorf("NormalMultiplier(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestNormalJitter(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{math.NaN(), 0},
		{math.Inf(-1), 0},
		{-0.5, 0},
		{math.Copysign(0, -1), 0},
		{0, 0},
		{math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat64},
		{0.2, 0.2},
		{1, 1},
		{1.5, 1},
		{math.Inf(1), 1},
	}
	for _, tt := range tests {
		got := NormalJitter(tt.in)
		if got != tt.want || math.Signbit(got) {
			t.Errorf("NormalJitter(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestGrow(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name          string
		base, ceiling time.Duration
		mult          float64
		attempt       int
		want          time.Duration
	}{
		{"first attempt is base", 100 * ms, 30 * time.Second, 2, 1, 100 * ms},
		{"second doubles", 100 * ms, 30 * time.Second, 2, 2, 200 * ms},
		{"ninth", 100 * ms, 30 * time.Second, 2, 9, 25600 * ms},
		{"held at ceiling", 100 * ms, 30 * time.Second, 2, 10, 30 * time.Second},
		{"attempt zero is one", 100 * ms, 0, 2, 0, 100 * ms},
		{"attempt MinInt is one", 100 * ms, 0, 2, math.MinInt, 100 * ms},
		{"base zero", 0, time.Second, 2, 5, 0},
		{"base negative", -time.Second, time.Second, 2, 5, 0},
		{"base MinInt64", math.MinInt64, math.MaxInt64, 2, math.MaxInt, 0},
		{"no ceiling saturates", 100 * ms, 0, 2, 64, math.MaxInt64},
		{"negative ceiling is none", 100 * ms, -1, 2, 3, 400 * ms},
		{"ceiling below base", time.Second, 10 * ms, 2, 1, 10 * ms},
		{"ceiling equals base", time.Second, time.Second, 2, 1 << 40, time.Second},
		{"multiplier zero doubles", time.Second, 0, 0, 3, 4 * time.Second},
		{"multiplier NaN doubles", time.Second, 0, math.NaN(), 3, 4 * time.Second},
		{"multiplier below one doubles", time.Second, 0, 0.5, 3, 4 * time.Second},
		{"multiplier one is constant", time.Second, 0, 1, math.MaxInt, time.Second},
		{"multiplier 1.5", 100 * ms, 0, 1.5, 3, 225 * ms},
		{"multiplier 3", time.Second, 0, 3, 4, 27 * time.Second},
		{"multiplier +Inf reaches ceiling at 2", time.Second, time.Minute, math.Inf(1), 2, time.Minute},
		{"multiplier +Inf attempt 1", time.Second, time.Minute, math.Inf(1), 1, time.Second},
		{"multiplier 4 exact", 3, 0, 4, 31, 3 << 60},
		{"multiplier 4 past bound", 3, 0, 4, 32, math.MaxInt64},
		{"shift to 2^62", 1, 0, 2, 63, 1 << 62},
		{"shift past 2^62", 1, 0, 2, 64, math.MaxInt64},
		{"largest exact", math.MaxInt64 / 2, 0, 2, 2, math.MaxInt64 - 1},
		{"max base max ceiling", math.MaxInt64, math.MaxInt64, 2, 1, math.MaxInt64},
		{"max base no ceiling", math.MaxInt64, 0, 2, math.MaxInt, math.MaxInt64},
		{"huge multiplier", 1, 0, math.MaxFloat64, 2, math.MaxInt64},
		{"attempt MaxInt", time.Nanosecond, 0, math.Nextafter(1, 2), math.MaxInt, math.MaxInt64},
		// The doubling shortcut takes 2 and 0 only, with a ceiling set.
		{"multiplier one under a ceiling", time.Second, time.Minute, 1, 5, time.Second},
		{"multiplier three under a ceiling", time.Second, time.Minute, 3, 3, 9 * time.Second},
		{"multiplier 1.5 under a ceiling", 100 * ms, time.Minute, 1.5, 3, 225 * ms},
		{"multiplier zero under a ceiling", time.Second, time.Minute, 0, 3, 4 * time.Second},
		{"multiplier -1 under a ceiling", time.Second, time.Minute, -1, 3, 4 * time.Second},
		{"doubling 1ns under a 1ns ceiling", 1, 1, 2, 1, 1},
		{"doubling to 2^62 under the bound", 1, math.MaxInt64, 2, 63, 1 << 62},
		{"doubling past 2^62 under the bound", 1, math.MaxInt64, 2, 64, math.MaxInt64},
		// Attempt 1 is base exactly, even where float64(base) rounds.
		{"attempt 1 of a base float64 rounds up", 1<<54 + 3, 0, 1.5, 1, 1<<54 + 3},
		{"attempt 1 of a base float64 rounds down", 1<<54 + 1, 0, 1.5, 1, 1<<54 + 1},
		// float64(base)×1.5 rounds to exactly 2^63 = float64(MaxInt64),
		// which must not be converted (MinInt64 on amd64).
		{"product rounds to 2^63", 6148914691236517205, 0, 1.5, 2, math.MaxInt64},
		// A shift count that would wrap a uint64 is past the bound.
		{"multiplier 16, attempt 2^62+1", 1, 0, 16, 1<<62 + 1, math.MaxInt64},
		{"multiplier 2^62, attempt 2^60", 1, 0, 1 << 62, 1 << 60, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := Grow(tt.base, tt.ceiling, tt.mult, tt.attempt); got != tt.want {
			t.Errorf("%s: Grow(%v, %v, %v, %d) = %v, want %v", tt.name, tt.base, tt.ceiling, tt.mult, tt.attempt, got, tt.want)
		}
	}
}

// TestGrowPowerOfTwoExact checks the shift path against math/big.
// TestDoubledShortcut pins which curves take Grow's inlined shortcut, the
// path every default Delay and Next runs: exactly a positive base and
// ceiling doubling (multiplier 2 or +0). Declining it costs speed only, and
// taking it for any other multiplier (one a bit away from 2, say) doubles
// a curve that must not.
func TestDoubledShortcut(t *testing.T) {
	const (
		ms  = time.Millisecond
		max = time.Duration(math.MaxInt64)
	)
	tests := []struct {
		base, ceiling time.Duration
		m             float64
		attempt       int
		want          time.Duration
		ok            bool
	}{
		{100 * ms, 30 * time.Second, 2, 3, 400 * ms, true},
		{100 * ms, 30 * time.Second, 0, 3, 400 * ms, true},
		{100 * ms, 30 * time.Second, 2, 10, 30 * time.Second, true},
		{1, 1, 2, 1, 1, true},
		{1, max, 2, 63, 1 << 62, true},
		{1, max, 2, 64, max, true},
		{1, max, 2, math.MaxInt, max, true},
		{100 * ms, 30 * time.Second, 2, -5, 100 * ms, true},
		{100 * ms, 30 * time.Second, math.Nextafter(2, 3), 3, 0, false},
		{100 * ms, 30 * time.Second, math.Nextafter(2, 1), 3, 0, false},
		{100 * ms, 30 * time.Second, math.Nextafter(1, 2), 3, 0, false},
		{100 * ms, 30 * time.Second, 3, 3, 0, false},
		{100 * ms, 30 * time.Second, 4, 3, 0, false},
		{100 * ms, 30 * time.Second, math.Copysign(0, -1), 3, 400 * ms, true},
		{100 * ms, 30 * time.Second, math.NaN(), 3, 0, false},
		{100 * ms, 30 * time.Second, -2, 3, 0, false},
		{0, 30 * time.Second, 2, 3, 0, false},
		{100 * ms, 0, 2, 3, 0, false},
		{-1, 30 * time.Second, 2, 3, 0, false},
		{100 * ms, -1, 2, 3, 0, false},
	}
	for _, tt := range tests {
		got, ok := doubled(tt.base, tt.ceiling, tt.m, tt.attempt)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("doubled(%v, %v, %v, %d) = %v, %v; want %v, %v", tt.base, tt.ceiling, tt.m, tt.attempt, got, ok, tt.want, tt.ok)
		}
		if !ok { // declined: Grow's general path gives the answer
			continue
		}
		if g := Grow(tt.base, tt.ceiling, tt.m, tt.attempt); g != got {
			t.Errorf("doubled(%v, %v, %v, %d) = %v, but Grow gives %v", tt.base, tt.ceiling, tt.m, tt.attempt, got, g)
		}
	}
}

func TestGrowPowerOfTwoExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		k := 1 + r.IntN(5) // multiplier 2^k
		base := time.Duration(r.Int64N(1<<uint(r.IntN(63)))) + 1
		ceiling := time.Duration(r.Int64N(math.MaxInt64))
		if r.IntN(4) == 0 {
			ceiling = 0
		}
		attempt := 1 + r.IntN(70)
		limit := ceilingOf(ceiling)
		want := new(big.Int).Lsh(big.NewInt(int64(base)), uint(k*(attempt-1)))
		if want.Cmp(big.NewInt(int64(limit))) > 0 || base > limit {
			want.SetInt64(int64(limit))
		}
		if got := Grow(base, ceiling, float64(int(1)<<k), attempt); int64(got) != want.Int64() {
			t.Fatalf("Grow(%d, %d, %d, %d) = %d, want %d", base, ceiling, 1<<k, attempt, got, want.Int64())
		}
	}
}

// TestGrowMatchesPow checks the float path against math.Pow, which computes
// an integer power by the same repeated squaring.
func TestGrowMatchesPow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		m := 1 + r.Float64()*3
		base := time.Duration(r.Int64N(int64(time.Hour))) + 1
		attempt := 1 + r.IntN(80)
		f := float64(base) * math.Pow(m, float64(attempt-1))
		want := time.Duration(math.MaxInt64)
		if f < 0x1p63 {
			want = max(time.Duration(f), base)
		}
		if got := Grow(base, 0, m, attempt); got != want {
			t.Fatalf("Grow(%d, 0, %v, %d) = %d, want %d", base, m, attempt, got, want)
		}
	}
}

// TestGrowMatchesPowHostile checks the float path against math.Pow where
// the multiplier sits next to 1 or to a power of two.
func TestGrowMatchesPowHostile(t *testing.T) {
	ms := []float64{math.Nextafter(1, 2), 1 + 0x1p-40, 1.0001, math.Nextafter(2, 1), math.Nextafter(2, 3), 3, math.Nextafter(4, 5), 1e3}
	for _, m := range ms {
		for _, base := range []time.Duration{1, 3, time.Millisecond, time.Second, 1 << 40} {
			for _, attempt := range []int{2, 3, 7, 40, 1 << 20, 1 << 40, 1 << 50, 1<<52 + 1, 1 << 55} {
				f := float64(base) * math.Pow(m, float64(attempt-1))
				want := time.Duration(math.MaxInt64)
				if f < 0x1p63 {
					want = max(time.Duration(f), base)
				}
				got := Grow(base, 0, m, attempt)
				// math.Pow may round the last bit differently from
				// repeated squaring far from 1: allow a relative 1e-12.
				if d := math.Abs(float64(got) - float64(want)); d > float64(want)*1e-12 {
					t.Errorf("Grow(%d, 0, %v, %d) = %d, want %d", base, m, attempt, got, want)
				}
			}
		}
	}
}

// TestGrowConstantWork would hang, not fail, if Grow looped once per
// attempt (or once per step up to the ceiling): a multiplier one ulp above 1
// needs about 2^57 steps to reach 2^63.
func TestGrowConstantWork(t *testing.T) {
	m := math.Nextafter(1, 2)
	for i := 0; i < 1000; i++ {
		for _, a := range []int{1 << 40, 1 << 50, 1 << 60, math.MaxInt} {
			if got := Grow(1, 0, m, a-i); got < 1 {
				t.Fatalf("Grow(1, 0, %v, %d) = %v, want at least 1ns", m, a-i, got)
			}
		}
	}
}

func TestGrowMonotone(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	check := func(base, ceiling time.Duration, m float64, a int) {
		t.Helper()
		g0, g1 := Grow(base, ceiling, m, a), Grow(base, ceiling, m, a+1)
		if g1 < g0 {
			t.Fatalf("Grow(%d, %d, %v, %d) = %d > Grow(…, %d) = %d", base, ceiling, m, a, g0, a+1, g1)
		}
	}
	for i := 0; i < 200000; i++ {
		m := math.Float64frombits(math.Float64bits(1) + r.Uint64N(1<<uint(r.IntN(54))))
		base := time.Duration(r.Int64N(1<<uint(r.IntN(63)))) + 1
		a := r.IntN(1 << uint(r.IntN(62)))
		if i%2 == 0 && m > 1 {
			// Aim at the top of the range, where float rounding bites.
			target := (float64(40+r.IntN(23))*math.Ln2 - math.Log(float64(base))) / math.Log(m)
			if target >= 1 && target < 1<<62 {
				a = int(target)
			}
		}
		check(base, 0, m, a)
	}
	for _, b := range hostileDurations {
		for _, c := range hostileDurations {
			for _, m := range hostileFloats {
				for _, a := range hostileAttempts {
					if a < math.MaxInt {
						check(b, c, m, a)
					}
				}
			}
		}
	}
}

func checkValue(t *testing.T, v Value, attempt int) {
	t.Helper()
	lo, hi := v.Bounds(attempt)
	if lo < 0 || hi < lo || hi > ceilingOf(v.MaxDelay) {
		t.Fatalf("%#v.Bounds(%d) = [%d, %d], want 0 ≤ lo ≤ hi ≤ %d", v, attempt, lo, hi, ceilingOf(v.MaxDelay))
	}
	if v.BaseDelay <= 0 && hi != 0 {
		t.Fatalf("%#v.Bounds(%d) = [%d, %d], want [0, 0] for a base ≤ 0", v, attempt, lo, hi)
	}
	if d := v.Delay(attempt); d < lo || d > hi {
		t.Fatalf("%#v.Delay(%d) = %d, want within [%d, %d]", v, attempt, d, lo, hi)
	}
}

// TestValueHostile sweeps every field over hostile values.
func TestValueHostile(t *testing.T) {
	t.Parallel()
	sampled := sample()
	for _, mode := range allModes {
		for _, b := range hostileDurations {
			for _, c := range hostileDurations {
				for _, m := range hostileFloats {
					if !sampled() {
						continue
					}
					jitters := []float64{0.2} // only JitterAdditive and JitterSymmetric read Jitter
					if mode.readsJitter() {
						jitters = []float64{math.NaN(), math.Inf(-1), -1, 0, 0x1p-1074, 1e-17, 0.2, 1, 2, math.Inf(1)}
					}
					for _, j := range jitters {
						v := Value{BaseDelay: b, MaxDelay: c, Multiplier: m, Jitter: j, JitterMode: mode}
						for _, a := range hostileAttempts {
							checkValue(t, v, a)
						}
					}
				}
			}
		}
	}
}

// TestValueRandomBits draws configurations from raw bit patterns.
func TestValueRandomBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 300000
	if testing.Short() {
		n = 30000
	}
	for i := 0; i < n; i++ {
		v := Value{
			BaseDelay:  time.Duration(r.Uint64()) >> uint(r.IntN(64)),
			MaxDelay:   time.Duration(r.Uint64()) >> uint(r.IntN(64)),
			Multiplier: math.Float64frombits(r.Uint64()),
			Jitter:     math.Float64frombits(r.Uint64()),
			JitterMode: JitterMode(r.IntN(len(allModes))),
		}
		if i%3 == 0 {
			v.Multiplier = 1 + r.Float64()*r.Float64()
			v.Jitter = r.Float64()
		}
		checkValue(t, v, int(r.Uint64())>>uint(r.IntN(64)))
	}
}

// TestGoldenNone pins the deterministic curves: a change here changes every
// user's retry timing.
func TestGoldenNone(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		v    Value
		want []time.Duration
	}{
		{
			Value{BaseDelay: 100 * ms, MaxDelay: 30 * time.Second, JitterMode: JitterNone},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second},
		},
		{
			Value{BaseDelay: 100 * ms, MaxDelay: 2 * time.Second, Multiplier: 1.5, JitterMode: JitterNone},
			[]time.Duration{100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond, 506250 * time.Microsecond, 759375 * time.Microsecond, 1139062500, 1708593750, 2 * time.Second},
		},
		{
			Value{BaseDelay: time.Second, Multiplier: 1, JitterMode: JitterNone},
			[]time.Duration{time.Second, time.Second, time.Second},
		},
	}
	for _, tt := range tests {
		for i, want := range tt.want {
			if got := tt.v.Delay(i + 1); got != want {
				t.Errorf("%v: Delay(%d) = %v, want %v", tt.v, i+1, got, want)
			}
		}
	}
}

// TestGoldenSchedule pins one seeded sequence per mode: a change here
// changes every user's retry timing.
func TestGoldenSchedule(t *testing.T) {
	golden := map[JitterMode][]time.Duration{
		JitterFull:         {36633933, 66829344, 372378447, 789761360, 1219640846, 732241064, 2712747401, 196753554},
		JitterEqual:        {68316967, 133414672, 386189224, 794880680, 1409820423, 1966120532, 3856373701, 2598376777},
		JitterDecorrelated: {173267867, 240275997, 677957408, 2009121945, 3835150090, 1221244129, 2033501154, 292818483},
		JitterAdditive:     {109158483, 216707336, 493094611, 997440339, 1904910211, 3383060265, 4542549480, 4039350710},
		JitterNone:         {100000000, 200000000, 400000000, 800000000, 1600000000, 3200000000, 5000000000, 5000000000},
		JitterSymmetric:    {93316967, 183414672, 486189224, 994880680, 1809820423, 2766120532, 4085098961, 3078701421},
	}
	for _, mode := range definedModes {
		s := Schedule{
			Curve: Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second, Jitter: 0.25, JitterMode: mode},
			Rand:  rand.New(rand.NewPCG(2026, 11)),
		}
		var got []time.Duration
		for range 8 {
			d, _ := s.Next()
			got = append(got, d)
		}
		if want := golden[mode]; !equalDurations(got, want) {
			t.Errorf("mode %v: seeded waits = %#v, want %#v", mode, got, want)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestValueBounds(t *testing.T) {
	const ms = time.Millisecond
	v := Value{BaseDelay: 100 * ms, MaxDelay: 30 * time.Second, Jitter: 0.5}
	tests := []struct {
		mode    JitterMode
		attempt int
		lo, hi  time.Duration
	}{
		{JitterNone, 3, 400 * ms, 400 * ms},
		{JitterFull, 3, 0, 400 * ms},
		{JitterFull, 99, 0, 30 * time.Second},
		{JitterEqual, 3, 200 * ms, 400 * ms},
		{JitterDecorrelated, 1, 100 * ms, 300 * ms},
		{JitterDecorrelated, 2, 100 * ms, 300 * ms},
		{JitterDecorrelated, 3, 100 * ms, 600 * ms},
		{JitterDecorrelated, 99, 100 * ms, 30 * time.Second},
		{JitterAdditive, 3, 400 * ms, 600*ms - 1},
		{JitterAdditive, 99, 20 * time.Second, 30 * time.Second},
		{JitterSymmetric, 1, 50 * ms, 150 * ms},
		{JitterSymmetric, 3, 200 * ms, 600 * ms},
		{JitterSymmetric, 99, 10 * time.Second, 30 * time.Second},
		{JitterDecorrelated, 0, 100 * ms, 300 * ms},
		{JitterDecorrelated, math.MinInt, 100 * ms, 300 * ms},
		{200, 3, 0, 400 * ms},
	}
	for _, tt := range tests {
		v.JitterMode = tt.mode
		if lo, hi := v.Bounds(tt.attempt); lo != tt.lo || hi != tt.hi {
			t.Errorf("%v.Bounds(%d) = [%v, %v], want [%v, %v]", v, tt.attempt, lo, hi, tt.lo, tt.hi)
		}
	}
	// With no ceiling and no jitter the curve is held at math.MaxInt64
	// itself, whose float64 rounds up to 2^63: never converted.
	for _, mode := range []JitterMode{JitterAdditive, JitterSymmetric} {
		v := Value{BaseDelay: time.Second, JitterMode: mode}
		if lo, hi := v.Bounds(3); lo != 4*time.Second || hi != 4*time.Second {
			t.Errorf("%v.Bounds(3) = [%v, %v], want [4s, 4s]", v, lo, hi)
		}
		v.BaseDelay = math.MaxInt64 / 2
		if lo, hi := v.Bounds(3); lo != math.MaxInt64 || hi != math.MaxInt64 {
			t.Errorf("%v.Bounds(3) = [%d, %d], want [MaxInt64, MaxInt64]", v, lo, hi)
		}
	}
}

func TestJitterRanges(t *testing.T) {
	const max = time.Duration(math.MaxInt64)
	type rng struct{ lo, hi time.Duration }
	mk := func(lo, hi time.Duration) rng { return rng{lo, hi} }
	tests := []struct {
		name string
		got  rng
		want rng
	}{
		{"widen zero jitter", mk(widenRange(time.Second, 0, max)), rng{time.Second, time.Second}},
		{"widen negative delay", mk(widenRange(-time.Second, 1, max)), rng{0, 0}},
		{"widen half", mk(widenRange(time.Second, 0.5, max)), rng{time.Second, 1500*time.Millisecond - 1}},
		{"widen fractional span", mk(widenRange(10, 0.25, max)), rng{10, 12}},
		{"widen near the bound", mk(widenRange(max-10, 1, max)), rng{max - 10, max}},
		{"widen at the bound", mk(widenRange(max, 1, max)), rng{max, max}},
		{"symmetric", mk(symmetricRange(time.Second, 0.2, max)), rng{800 * time.Millisecond, 1200 * time.Millisecond}},
		{"symmetric whole ns", mk(symmetricRange(10, 0.15, max)), rng{9, 11}},
		{"symmetric under 1ns", mk(symmetricRange(1, 0.2, max)), rng{1, 1}},
		{"symmetric zero jitter", mk(symmetricRange(7, 0, max)), rng{7, 7}},
		{"symmetric zero", mk(symmetricRange(0, 1, max)), rng{0, 0}},
		{"symmetric full width", mk(symmetricRange(max/2, 1, max)), rng{0, max - 1}},
		{"symmetric held at the limit", mk(symmetricRange(max, 1, max)), rng{0, max}},
		{"symmetric held at a small limit", mk(symmetricRange(100, 0.5, 120)), rng{50, 120}},
		{"decorrelate first", mk(decorrelateRange(time.Second, 0, 0)), rng{time.Second, 3 * time.Second}},
		{"decorrelate capped", mk(decorrelateRange(time.Second, 2*time.Second, time.Minute)), rng{time.Second, 2 * time.Second}},
		{"decorrelate previous saturates", mk(decorrelateRange(time.Second, 0, max/2)), rng{time.Second, max}},
		{"decorrelate 3×previous just fits", mk(decorrelateRange(1, 0, max/3)), rng{1, max - 1}},
		{"decorrelate 3×previous just does not", mk(decorrelateRange(1, 0, max/3+1)), rng{1, max}},
		{"decorrelate ceiling equals base", mk(decorrelateRange(time.Second, time.Second, time.Minute)), rng{time.Second, time.Second}},
		{"decorrelate base zero", mk(decorrelateRange(0, time.Second, time.Second)), rng{0, 0}},
		{"decorrelate ceiling below base", mk(decorrelateRange(time.Second, time.Millisecond, time.Minute)), rng{time.Millisecond, time.Millisecond}},
		{"add jitter", mk(addJitterRange(time.Second, 10)), rng{time.Second, time.Second + 9}},
		{"add jitter negative interval", mk(addJitterRange(-time.Second, 10)), rng{0, 9}},
		{"add no jitter", mk(addJitterRange(time.Second, -5)), rng{time.Second, time.Second}},
		{"add jitter saturates", mk(addJitterRange(max-5, max)), rng{max - 5, max}},
		{"add jitter to the bound", mk(addJitterRange(max-5, 6)), rng{max - 5, max}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: range = [%d, %d], want [%d, %d]", tt.name, tt.got.lo, tt.got.hi, tt.want.lo, tt.want.hi)
		}
	}
}

// TestHelpersHostile checks every exported helper stays in its interval for
// hostile inputs, drawing from the package-level source.
func TestHelpersHostile(t *testing.T) {
	for _, d := range hostileDurations {
		want := max(d, 0)
		for range 20 {
			if got := Full(d); got < 0 || got > want {
				t.Fatalf("Full(%d) = %d, want in [0, %d]", d, got, want)
			}
			if got := Equal(d); got < want/2 || got > want {
				t.Fatalf("Equal(%d) = %d, want in [%d, %d]", d, got, want/2, want)
			}
			for _, j := range hostileFloats {
				nj := NormalJitter(j)
				hi := float64(want) * (1 + nj)
				if got := Widen(d, j); got < want || float64(got) > hi {
					t.Fatalf("Widen(%d, %v) = %d, want in [%d, %g]", d, j, got, want, hi)
				}
			}
			for _, e := range hostileDurations {
				if got := AddJitter(d, e); got < want || (e > 0 && got-want >= e) {
					t.Fatalf("AddJitter(%d, %d) = %d, want in [%d, %d+%d)", d, e, got, want, want, e)
				}
				for _, p := range hostileDurations {
					lo, hi := decorrelateRange(d, e, p)
					if got := Decorrelate(d, e, p); got < lo || got > hi || got < 0 || (e > 0 && got > e) {
						t.Fatalf("Decorrelate(%d, %d, %d) = %d, want in [%d, %d]", d, e, p, got, lo, hi)
					}
				}
			}
		}
	}
}

// chiSquareUniform draws n values with draw, which must lie in [lo, lo+k),
// and fails if they are not uniform over those k values (p < 1e-6).
func chiSquareUniform(t *testing.T, name string, lo time.Duration, k, n int, draw func() time.Duration) {
	t.Helper()
	counts := make([]int, k)
	for range n {
		d := draw()
		if d < lo || d-lo >= time.Duration(k) {
			t.Fatalf("%s = %d, want in [%d, %d]", name, d, lo, lo+time.Duration(k-1))
		}
		counts[d-lo]++
	}
	exp := float64(n) / float64(k)
	var chi float64
	for _, c := range counts {
		chi += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	// Wilson–Hilferty: the chi-square quantile at z = 4.75 (p ≈ 1e-6).
	df := float64(k - 1)
	crit := df * math.Pow(1-2/(9*df)+4.75*math.Sqrt(2/(9*df)), 3)
	if chi > crit {
		t.Errorf("%s: chi-square %.1f over %d values, want below %.1f: counts %v", name, chi, k, crit, counts)
	}
}

// ksUniform fails if n draws from [lo, hi] are not uniform over it, by the
// Kolmogorov–Smirnov distance (p < 1e-6). Meant for wide intervals.
func ksUniform(t *testing.T, name string, lo, hi time.Duration, n int, draw func() time.Duration) {
	t.Helper()
	xs := make([]float64, n)
	width := float64(hi-lo) + 1
	for i := range xs {
		d := draw()
		if d < lo || d > hi {
			t.Fatalf("%s = %d, want in [%d, %d]", name, d, lo, hi)
		}
		xs[i] = float64(d-lo) / width
	}
	sort.Float64s(xs)
	var dist float64
	for i, x := range xs {
		dist = max(dist, float64(i+1)/float64(n)-x, x-float64(i)/float64(n))
	}
	if crit := math.Sqrt(-math.Log(1e-6/2)/2) / math.Sqrt(float64(n)); dist > crit {
		t.Errorf("%s: KS distance %.4f from uniform on [%d, %d], want below %.4f", name, dist, lo, hi, crit)
	}
}

// TestDistributions checks each jitter is uniform over the interval it
// claims, seeded, with the draw the exported functions make.
func TestDistributions(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const max = time.Duration(math.MaxInt64)
	const n = 20000
	draw := func(lo, hi time.Duration) func() time.Duration {
		return func() time.Duration { return uniform(r, lo, hi) }
	}
	// Small intervals: every value, both ends included.
	chiSquareUniform(t, "Full(9)", 0, 10, n, draw(0, 9))
	lo, hi := Value{BaseDelay: 9, JitterMode: JitterEqual}.Bounds(1)
	chiSquareUniform(t, "Equal(9)", 4, 6, n, draw(lo, hi))
	lo, hi = decorrelateRange(3, 0, 3)
	chiSquareUniform(t, "Decorrelate(3, 0, 3)", 3, 7, n, draw(lo, hi))
	lo, hi = widenRange(20, 0.5, max)
	chiSquareUniform(t, "Widen(20, 0.5)", 20, 10, n, draw(lo, hi))
	lo, hi = addJitterRange(100, 8)
	chiSquareUniform(t, "AddJitter(100, 8)", 100, 8, n, draw(lo, hi))
	lo, hi = Value{BaseDelay: 10, Jitter: 0.5, JitterMode: JitterSymmetric}.Bounds(1)
	chiSquareUniform(t, "symmetric 10ns ±50%", 5, 11, n, draw(lo, hi))
	// Near math.MaxInt64 the spread must reach, not pile up on, the bound.
	lo, hi = widenRange(max-15, 1, max)
	chiSquareUniform(t, "Widen(MaxInt64-15, 1)", max-15, 16, n, draw(lo, hi))
	lo, hi = addJitterRange(max-7, 1000)
	chiSquareUniform(t, "AddJitter(MaxInt64-7, 1000)", max-7, 8, n, draw(lo, hi))
	lo, hi = Value{BaseDelay: max - 20, MaxDelay: max - 4, JitterMode: JitterFull}.Bounds(2)
	if lo != 0 || hi != max-4 {
		t.Fatalf("Full at the bound: bounds [%d, %d]", lo, hi)
	}

	// Wide intervals, including the whole of [0, MaxInt64].
	ksUniform(t, "Full(MaxInt64)", 0, max, n, draw(0, max))
	ksUniform(t, "Equal(MaxInt64)", max/2, max, n, draw(max/2, max))
	lo, hi = widenRange(max/3*2, 1, max)
	ksUniform(t, "Widen(2/3 MaxInt64, 1)", lo, hi, n, draw(lo, hi))
	lo, hi = decorrelateRange(time.Second, 0, max/2)
	ksUniform(t, "Decorrelate(1s, 0, MaxInt64/2)", lo, hi, n, draw(lo, hi))

	// Additive at the ceiling: spread over [MaxDelay/(1+j), MaxDelay], with
	// the ceiling itself no likelier than any other nanosecond.
	v := Value{BaseDelay: time.Second, MaxDelay: 30 * time.Second, Jitter: 0.5, JitterMode: JitterAdditive}
	lo, hi = v.Bounds(40)
	ksUniform(t, "additive at the ceiling", lo, hi, n, draw(lo, hi))
	if lo != 20*time.Second || hi != 30*time.Second {
		t.Errorf("additive at the ceiling: bounds [%v, %v], want [20s, 30s]", lo, hi)
	}
	v = Value{BaseDelay: max - 100, Jitter: 1, JitterMode: JitterAdditive}
	lo, hi = v.Bounds(5)
	ksUniform(t, "additive uncapped", lo, hi, n, draw(lo, hi))

	// Symmetric at the ceiling, and next to math.MaxInt64 with no ceiling.
	v = Value{BaseDelay: time.Second, MaxDelay: 30 * time.Second, Jitter: 0.5, JitterMode: JitterSymmetric}
	if lo, hi = v.Bounds(40); lo != 10*time.Second || hi != 30*time.Second {
		t.Errorf("symmetric at the ceiling: bounds [%v, %v], want [10s, 30s]", lo, hi)
	}
	ksUniform(t, "symmetric at the ceiling", lo, hi, n, draw(lo, hi))
	for _, j := range []float64{0.2, 1} {
		v = Value{BaseDelay: max - 100, Jitter: j, JitterMode: JitterSymmetric}
		lo, hi = v.Bounds(5)
		if float64(hi) < float64(max)*0.999 || float64(lo) > float64(max)/(1+j)*(1-j)*1.001 {
			t.Errorf("symmetric uncapped, jitter %v: bounds [%d, %d], want about [MaxInt64×%.3f, MaxInt64]", j, lo, hi, (1-j)/(1+j))
		}
		ksUniform(t, fmt.Sprintf("symmetric uncapped, jitter %v", j), lo, hi, n, draw(lo, hi))
	}
}

// TestDistributionsExported draws from the exported functions themselves,
// so from the package-level source, which cannot be seeded: the thresholds
// fail a correct implementation with probability below 1e-6 per check.
func TestDistributionsExported(t *testing.T) {
	const max = time.Duration(math.MaxInt64)
	const n = 20000
	chiSquareUniform(t, "Full(9)", 0, 10, n, func() time.Duration { return Full(9) })
	chiSquareUniform(t, "Equal(9)", 4, 6, n, func() time.Duration { return Equal(9) })
	chiSquareUniform(t, "Widen(MaxInt64-15, 1)", max-15, 16, n, func() time.Duration { return Widen(max-15, 1) })
	chiSquareUniform(t, "Decorrelate(3, 0, 3)", 3, 7, n, func() time.Duration { return Decorrelate(3, 0, 3) })
	chiSquareUniform(t, "AddJitter(100, 8)", 100, 8, n, func() time.Duration { return AddJitter(100, 8) })
	ksUniform(t, "Full(MaxInt64)", 0, max, n, func() time.Duration { return Full(max) })
	// n = 2^62+1 values: about one draw in four takes the rejection path.
	ksUniform(t, "Equal(MaxInt64)", max/2, max, n, func() time.Duration { return Equal(max) })
	ksUniform(t, "Decorrelate(1, 0, MaxInt64/5)", 1, max/5*3, n, func() time.Duration { return Decorrelate(1, 0, max/5) })
	v := Value{BaseDelay: time.Second, MaxDelay: 30 * time.Second, Jitter: 0.5, JitterMode: JitterAdditive}
	ksUniform(t, "additive at the ceiling", 20*time.Second, 30*time.Second, n, func() time.Duration { return v.Delay(40) })
	v = Value{BaseDelay: max - 100, Jitter: 1, JitterMode: JitterSymmetric}
	ksUniform(t, "symmetric uncapped", 0, max, n, func() time.Duration { return v.Delay(3) })
	chiSquareUniform(t, "symmetric 10ns ±50%", 5, 11, n, func() time.Duration { return Value{BaseDelay: 10, Jitter: 0.5, JitterMode: JitterSymmetric}.Delay(1) })
	for _, mode := range []JitterMode{JitterFull, JitterEqual, JitterDecorrelated, JitterAdditive, JitterSymmetric} {
		v := Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second, Jitter: 0.2, JitterMode: mode}
		lo, hi := v.Bounds(6)
		ksUniform(t, "Delay(6) "+mode.String(), lo, hi, n, func() time.Duration { return v.Delay(6) })
	}
}

func TestScheduleZero(t *testing.T) {
	var s Schedule
	for i := range 100 {
		if d, ok := s.Next(); d != 0 || !ok {
			t.Fatalf("zero Schedule: Next() #%d = %v, %v, want 0, true", i+1, d, ok)
		}
	}
	if s.Attempt() != 100 || s.Elapsed() != 0 {
		t.Errorf("zero Schedule after 100: Attempt() = %d, Elapsed() = %v, want 100, 0", s.Attempt(), s.Elapsed())
	}
}

func TestScheduleMaxRetries(t *testing.T) {
	s := Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterNone}, MaxRetries: 3}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if d, ok := s.Next(); d != w || !ok {
			t.Fatalf("Next() #%d = %v, %v, want %v, true", i+1, d, ok, w)
		}
	}
	for range 3 {
		if d, ok := s.Next(); d != 0 || ok {
			t.Fatalf("Next() after MaxRetries = %v, %v, want 0, false", d, ok)
		}
	}
	if s.Attempt() != 3 || s.Elapsed() != 7*time.Second {
		t.Errorf("Attempt(), Elapsed() = %d, %v, want 3, 7s", s.Attempt(), s.Elapsed())
	}
	s.Reset()
	if d, ok := s.Next(); d != time.Second || !ok || s.Attempt() != 1 {
		t.Errorf("after Reset: Next() = %v, %v (attempt %d), want 1s, true (attempt 1)", d, ok, s.Attempt())
	}
}

func TestScheduleMaxElapsed(t *testing.T) {
	s := Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterNone}, MaxElapsed: 7 * time.Second}
	for i, w := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if d, ok := s.Next(); d != w || !ok {
			t.Fatalf("Next() #%d = %v, %v, want %v, true", i+1, d, ok, w)
		}
	}
	// 7s + 8s > 7s: not handed out, and the sequence stays over.
	if d, ok := s.Next(); d != 0 || ok {
		t.Fatalf("Next() past MaxElapsed = %v, %v, want 0, false", d, ok)
	}
	s.Curve.BaseDelay = 0 // would fit now, but the sequence is over
	if d, ok := s.Next(); d != 0 || ok {
		t.Fatalf("Next() after false = %v, %v, want 0, false", d, ok)
	}
	if s.Attempt() != 3 || s.Elapsed() != 7*time.Second {
		t.Errorf("Attempt(), Elapsed() = %d, %v, want 3, 7s", s.Attempt(), s.Elapsed())
	}
}

func TestScheduleOverride(t *testing.T) {
	s := Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterNone}, MaxElapsed: time.Hour}
	s.Next() // 1s
	s.Override(42 * time.Second)
	if d, ok := s.Next(); d != 42*time.Second || !ok {
		t.Fatalf("Next() after Override(42s) = %v, %v, want 42s, true", d, ok)
	}
	// The curve did not advance: its second wait comes next.
	if d, _ := s.Next(); d != 2*time.Second {
		t.Fatalf("Next() after an overridden wait = %v, want 2s", d)
	}
	s.Override(-time.Second)
	if d, ok := s.Next(); d != 0 || !ok {
		t.Fatalf("Next() after Override(-1s) = %v, %v, want 0, true", d, ok)
	}
	if s.Attempt() != 4 || s.Elapsed() != 45*time.Second {
		t.Fatalf("Attempt(), Elapsed() = %d, %v, want 4, 45s", s.Attempt(), s.Elapsed())
	}
	// A huge Retry-After ends the sequence instead of holding the caller.
	s.Override(math.MaxInt64)
	if d, ok := s.Next(); d != 0 || ok {
		t.Fatalf("Next() after Override(MaxInt64) = %v, %v, want 0, false", d, ok)
	}
	// And MaxRetries still counts overridden waits.
	s = Schedule{MaxRetries: 1}
	s.Override(time.Second)
	s.Next()
	if d, ok := s.Next(); ok {
		t.Fatalf("Next() past MaxRetries = %v, %v, want 0, false", d, ok)
	}
	// Reset drops a pending override.
	s.Override(time.Minute)
	s.Reset()
	if d, _ := s.Next(); d != 0 {
		t.Fatalf("Next() after Reset = %v, want 0 (override dropped)", d)
	}
}

// TestScheduleDeadline: a wait that would end after Deadline is refused, and
// refused again until Reset, which keeps Deadline.
func TestScheduleDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		set := func(at time.Time) { time.Sleep(time.Until(at)) }
		s := Schedule{Curve: Value{BaseDelay: 300 * time.Millisecond, JitterMode: JitterNone}, Deadline: t0.Add(time.Second)}
		if d, ok := s.Next(); d != 300*time.Millisecond || !ok {
			t.Fatalf("Next() = %v, %v, want 300ms, true", d, ok)
		}
		set(t0.Add(300 * time.Millisecond))
		if d, ok := s.Next(); d != 600*time.Millisecond || !ok { // ends at t0+900ms
			t.Fatalf("Next() = %v, %v, want 600ms, true", d, ok)
		}
		set(t0.Add(900 * time.Millisecond))
		if d, ok := s.Next(); d != 0 || ok { // 1.2s would end at t0+2.1s
			t.Fatalf("Next() with 100ms left = %v, %v, want 0, false", d, ok)
		}
		if d, ok := s.Next(); d != 0 || ok {
			t.Fatalf("Next() after false = %v, %v, want 0, false until Reset", d, ok)
		}
		if s.Attempt() != 2 || s.Elapsed() != 900*time.Millisecond {
			t.Errorf("Attempt(), Elapsed() = %d, %v, want 2, 900ms: a refused wait is not counted", s.Attempt(), s.Elapsed())
		}
		s.Reset()
		if s.Deadline != t0.Add(time.Second) {
			t.Fatalf("Reset dropped Deadline: %v", s.Deadline)
		}
		if d, ok := s.Next(); d != 0 || ok { // the first wait again, 300ms, with 100ms left
			t.Fatalf("Next() after Reset = %v, %v, want 0, false: Reset keeps Deadline", d, ok)
		}

		// The edge: a wait ending at Deadline is handed out, one ending a
		// nanosecond after is not.
		t0 = time.Now()
		for _, tt := range []struct {
			deadline time.Time
			ok       bool
		}{
			{t0.Add(300 * time.Millisecond), true},
			{t0.Add(300*time.Millisecond - 1), false},
			{t0, false},
			{t0.Add(-time.Hour), false},
			{time.Unix(0, 0), false},
			{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), true},
		} {
			s := Schedule{Curve: Value{BaseDelay: 300 * time.Millisecond, JitterMode: JitterNone}, Deadline: tt.deadline}
			if _, ok := s.Next(); ok != tt.ok {
				t.Errorf("Deadline now%+v: Next() ok = %v, want %v", tt.deadline.Sub(t0), ok, tt.ok)
			}
		}
		// A zero wait still needs the deadline not to have passed.
		s = Schedule{Deadline: t0}
		if _, ok := s.Next(); !ok {
			t.Errorf("zero wait at the deadline: Next() = false, want true")
		}
		s = Schedule{Deadline: t0.Add(-1)}
		if _, ok := s.Next(); ok {
			t.Errorf("zero wait past the deadline: Next() = true, want false")
		}
	})
}

// TestScheduleDeadlineOverride: a server's Retry-After is refused like any
// other wait that would end after Deadline, and MaxDelay does not cap it.
func TestScheduleDeadlineOverride(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		s := Schedule{Curve: Value{BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, JitterMode: JitterNone}, Deadline: t0.Add(1500 * time.Millisecond)}
		s.Override(1400 * time.Millisecond) // fits, above MaxDelay
		if d, ok := s.Next(); d != 1400*time.Millisecond || !ok {
			t.Fatalf("Next() after Override(1.4s) = %v, %v, want 1.4s, true", d, ok)
		}
		s.Reset()
		s.Override(3 * time.Second) // Retry-After: 3, with 1.5s left
		if d, ok := s.Next(); d != 0 || ok {
			t.Fatalf("Next() after Override(3s) = %v, %v, want 0, false", d, ok)
		}
		if d, ok := s.Next(); d != 0 || ok { // the curve's 10ms would fit, but the sequence is over
			t.Fatalf("Next() after a refused override = %v, %v, want 0, false", d, ok)
		}
		// Without MaxElapsed or Deadline, nothing caps an override.
		s = Schedule{Curve: Value{BaseDelay: time.Second, MaxDelay: 10 * time.Second}, MaxRetries: 5}
		s.Override(24 * time.Hour)
		if d, ok := s.Next(); d != 24*time.Hour || !ok {
			t.Fatalf("Next() after Override(24h), no limit on time = %v, %v, want 24h, true", d, ok)
		}
	})
}

// TestScheduleErr: Err names the limit that ended the sequence, keeps
// naming it until Reset, and reports MaxRetries before MaxElapsed before
// Deadline when several refuse the same wait.
func TestScheduleErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		curve := Value{BaseDelay: time.Second, JitterMode: JitterNone} // 1s, 2s, 4s, …
		for _, tt := range []struct {
			name  string
			s     Schedule
			waits int // handed out before the refusal
			want  error
		}{
			{"no limit", Schedule{Curve: curve}, 20, nil},
			{"MaxRetries", Schedule{Curve: curve, MaxRetries: 2}, 2, ErrMaxRetries},
			{"MaxElapsed", Schedule{Curve: curve, MaxElapsed: 7 * time.Second}, 3, ErrMaxElapsed},
			{"Deadline", Schedule{Curve: curve, Deadline: t0.Add(3 * time.Second)}, 2, ErrDeadline}, // the clock stands still: 4s does not fit
			{"MaxRetries before MaxElapsed", Schedule{Curve: curve, MaxRetries: 3, MaxElapsed: 7 * time.Second}, 3, ErrMaxRetries},
			{"MaxRetries before Deadline", Schedule{Curve: curve, MaxRetries: 2, Deadline: t0.Add(3 * time.Second)}, 2, ErrMaxRetries},
			{"MaxElapsed before Deadline", Schedule{Curve: curve, MaxElapsed: 3 * time.Second, Deadline: t0.Add(3 * time.Second)}, 2, ErrMaxElapsed},
			{"zero Schedule", Schedule{}, 20, nil},
		} {
			s := tt.s
			for i := range tt.waits {
				if _, ok := s.Next(); !ok {
					t.Fatalf("%s: Next() #%d = false (Err %v), want true", tt.name, i+1, s.Err())
				}
				if err := s.Err(); err != nil {
					t.Fatalf("%s: Err() after a true Next = %v, want nil", tt.name, err)
				}
			}
			if tt.want == nil {
				continue
			}
			for range 2 { // and again: the refusal is sticky
				if d, ok := s.Next(); ok || d != 0 {
					t.Fatalf("%s: Next() after %d waits = %v, %v, want 0, false", tt.name, tt.waits, d, ok)
				}
				if err := s.Err(); err != tt.want {
					t.Fatalf("%s: Err() = %v, want %v", tt.name, err, tt.want)
				}
			}
			s.Reset()
			if err := s.Err(); err != nil {
				t.Fatalf("%s: Err() after Reset = %v, want nil", tt.name, err)
			}
			if _, ok := s.Next(); !ok {
				t.Fatalf("%s: Next() after Reset = false, want true", tt.name)
			}
		}
		// An override refused by the deadline says so too.
		s := Schedule{Curve: curve, Deadline: t0.Add(time.Minute)}
		s.Override(time.Hour)
		if _, ok := s.Next(); ok || s.Err() != ErrDeadline {
			t.Fatalf("Next() after Override(1h) with a minute left: ok %v, Err() %v, want false, %v", ok, s.Err(), ErrDeadline)
		}
		// Bad text does not touch the state; good text resets it.
		s = Schedule{Curve: curve, MaxRetries: 1}
		s.Next()
		s.Next()
		if err := s.UnmarshalText([]byte("1s, 2 retries")); err != nil || s.Err() != nil {
			t.Fatalf("UnmarshalText: %v; Err() = %v, want nil (the sequence starts over)", err, s.Err())
		}
	})
}

// TestErrDeadlineIsDeadlineExceeded: a loop that checks for a missed
// deadline with errors.Is finds one whether a context or a Schedule saw it.
func TestErrDeadlineIsDeadlineExceeded(t *testing.T) {
	if !errors.Is(ErrDeadline, context.DeadlineExceeded) {
		t.Errorf("errors.Is(ErrDeadline, context.DeadlineExceeded) = false, want true")
	}
	if wrapped := fmt.Errorf("fetch: %w", ErrDeadline); !errors.Is(wrapped, ErrDeadline) || !errors.Is(wrapped, context.DeadlineExceeded) {
		t.Errorf("a wrapped ErrDeadline lost its identity: %v", wrapped)
	}
	if errors.Is(ErrMaxRetries, context.DeadlineExceeded) || errors.Is(ErrMaxElapsed, context.DeadlineExceeded) {
		t.Errorf("ErrMaxRetries or ErrMaxElapsed matches context.DeadlineExceeded: only the deadline is a deadline")
	}
	var timeout interface{ Timeout() bool }
	if !errors.As(ErrDeadline, &timeout) || !timeout.Timeout() {
		t.Errorf("ErrDeadline.Timeout() is not true")
	}
	msgs := map[string]bool{}
	for _, err := range []error{ErrMaxRetries, ErrMaxElapsed, ErrDeadline} {
		if m := err.Error(); !strings.HasPrefix(m, "backoff: ") || msgs[m] {
			t.Errorf("error message %q: want a distinct message starting \"backoff: \"", m)
		}
		msgs[err.Error()] = true
	}
}

// TestScheduleDeadlineTimers runs a loop on timers under a context's
// deadline, in virtual time: the Schedule ends it before the context
// expires.
func TestScheduleDeadlineTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		s := Schedule{Curve: Value{BaseDelay: 10 * time.Millisecond, JitterMode: JitterNone}}
		s.Deadline, _ = ctx.Deadline()
		timer := time.NewTimer(0)
		<-timer.C
		for {
			wait, ok := s.Next()
			if !ok {
				break
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				t.Fatalf("slept into the deadline after %d waits (%v): the last wait was %v", s.Attempt(), s.Elapsed(), wait)
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("Next() reported false only after the deadline passed")
		}
		// 10+20+40+80ms fit in 300ms; the next wait, 160ms, cannot, and no
		// wait could fit if the timers ran very late.
		if n := s.Attempt(); n > 4 {
			t.Errorf("handed out %d waits, want at most 4 within 300ms", n)
		}
		if next := Grow(10*time.Millisecond, 0, 2, s.Attempt()+1); !time.Now().Add(next).After(s.Deadline) {
			t.Errorf("refused a wait of %v that would have ended by the deadline", next)
		}
	})
}

// TestScheduleDecorrelated checks the real loop: each wait is drawn from the
// wait handed out before, and an override does not feed it.
func TestScheduleDecorrelated(t *testing.T) {
	base, ceiling := 10*time.Millisecond, 5*time.Second
	s := Schedule{
		Curve: Value{BaseDelay: base, MaxDelay: ceiling, JitterMode: JitterDecorrelated},
		Rand:  rand.New(rand.NewPCG(11, 12)),
	}
	prev := base
	for i := range 2000 {
		if i%7 == 3 {
			s.Override(time.Hour)
			if d, _ := s.Next(); d != time.Hour {
				t.Fatalf("overridden wait = %v, want 1h", d)
			}
			continue
		}
		d, ok := s.Next()
		if hi := min(3*prev, ceiling); !ok || d < base || d > hi {
			t.Fatalf("wait #%d = %v, %v, want in [%v, %v]", i+1, d, ok, base, hi)
		}
		prev = d
	}
}

// TestDecorrelatedMultiplier pins what JitterDecorrelated's doc says: a
// Schedule does not read Multiplier (its waits grow from the waits it drew),
// and Value.Bounds does (the curve's previous step stands in for the wait).
func TestDecorrelatedMultiplier(t *testing.T) {
	waits := func(m float64) []time.Duration {
		s := Schedule{Curve: Value{BaseDelay: time.Second, MaxDelay: time.Hour, Multiplier: m, JitterMode: JitterDecorrelated}, Rand: rand.New(rand.NewPCG(5, 6))}
		var ws []time.Duration
		for range 12 {
			d, _ := s.Next()
			ws = append(ws, d)
		}
		return ws
	}
	if a, b := waits(1.5), waits(4); !equalDurations(a, b) {
		t.Errorf("Schedule waits with Multiplier 1.5 = %v, with 4 = %v, want the same", a, b)
	}
	for m, want := range map[float64]time.Duration{1.5: 4500 * time.Millisecond, 4: 12 * time.Second} {
		v := Value{BaseDelay: time.Second, MaxDelay: time.Hour, Multiplier: m, JitterMode: JitterDecorrelated}
		if _, hi := v.Bounds(3); hi != want {
			t.Errorf("%v.Bounds(3) = [_, %v], want up to 3 × Grow(…, 2) = %v", v, hi, want)
		}
	}
}

func TestScheduleSaturates(t *testing.T) {
	s := Schedule{Curve: Value{BaseDelay: math.MaxInt64 / 2, JitterMode: JitterNone}}
	for range 5 {
		if d, ok := s.Next(); d < 0 || !ok {
			t.Fatalf("Next() = %v, %v, want a non-negative wait", d, ok)
		}
	}
	if s.Elapsed() != math.MaxInt64 {
		t.Errorf("Elapsed() = %d, want MaxInt64 (saturated)", s.Elapsed())
	}
}

func TestScheduleReproducible(t *testing.T) {
	for _, mode := range allModes {
		run := func() []time.Duration {
			s := Schedule{Curve: Value{BaseDelay: time.Millisecond, MaxDelay: time.Second, Jitter: 0.3, JitterMode: mode}, Rand: rand.New(rand.NewPCG(1, 1))}
			var ds []time.Duration
			for range 50 {
				d, _ := s.Next()
				ds = append(ds, d)
			}
			return ds
		}
		if a, b := run(), run(); !equalDurations(a, b) {
			t.Errorf("mode %v: two runs from one seed differ:\n%v\n%v", mode, a, b)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(1994, time.November, 6, 8, 49, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{"0", 0, true},
		{"  7\t", 7 * time.Second, true},
		{"007", 7 * time.Second, true},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", math.MaxInt64, true},
		{"99999999999999", math.MaxInt64, true},
		{"92233720360", math.MaxInt64, true}, // the digit after the largest fit
		{"09223372036", 9223372036 * time.Second, true},
		{"99999999999999999999999999999999", math.MaxInt64, true},
		{"Sun, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"Sunday, 06-Nov-94 08:49:37 GMT", 37 * time.Second, true},
		{"Sun Nov  6 08:49:37 1994", 37 * time.Second, true},
		{"Sun, 06 Nov 1994 08:48:00 GMT", 0, true},
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"12 s", 0, false},
		{"soon", 0, false},
		{"Sun, 06 Nov 1994 08:49:37.5 GMT", 0, false},
		{"Sun, 06 Nov 1994 08:49:37 PST", 0, false},
		{"２", 0, false},
	}
	for _, tt := range tests {
		if got, ok := ParseRetryAfter(tt.in, now); got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestAllocs pins zero allocations on every computing path.
func TestAllocs(t *testing.T) {
	now := time.Now()
	s := Schedule{Curve: Value{BaseDelay: time.Millisecond, MaxDelay: time.Second}, Rand: rand.New(rand.NewPCG(1, 2))}
	d := Schedule{Curve: Value{BaseDelay: time.Millisecond, MaxDelay: time.Second}, Deadline: time.Now().Add(time.Hour)}
	e := Schedule{Curve: Value{BaseDelay: time.Millisecond}, MaxRetries: 1}
	funcs := map[string]func(){
		"Grow":                    func() { Grow(time.Millisecond, time.Second, 1.5, 9) },
		"Full":                    func() { Full(time.Second) },
		"Equal":                   func() { Equal(time.Second) },
		"Widen":                   func() { Widen(time.Second, 0.3) },
		"Decorrelate":             func() { Decorrelate(time.Millisecond, time.Second, 40*time.Millisecond) },
		"AddJitter":               func() { AddJitter(time.Second, time.Millisecond) },
		"ParseRetryAfter":         func() { ParseRetryAfter(" 120 ", now) },
		"ParseRetryAfter date":    func() { ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now) },
		"ParseRetryAfter RFC 850": func() { ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now) },
		"ParseRetryAfter asctime": func() { ParseRetryAfter("Sun Nov  6 08:49:37 1994", now) },
		"Schedule.Next":           func() { s.Next() },
		"Schedule.Override":       func() { s.Override(time.Second); s.Next() },
		"Schedule.Next deadline":  func() { d.Reset(); d.Next() },
		"Schedule.Err":            func() { e.Reset(); e.Next(); e.Next(); _ = e.Err() },
	}
	for _, mode := range allModes {
		v := Value{BaseDelay: time.Millisecond, MaxDelay: time.Second, Multiplier: 1.5, Jitter: 0.2, JitterMode: mode}
		funcs["Delay "+mode.String()] = func() { v.Delay(9) }
		funcs["Bounds "+mode.String()] = func() { v.Bounds(9) }
		m := mode
		funcs["Next "+mode.String()] = func() { s.Curve.JitterMode = m; s.Next() }
	}
	for name, f := range funcs {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

// TestConcurrentValue shares one Value between goroutines; run with -race.
func TestConcurrentValue(t *testing.T) {
	v := Value{BaseDelay: time.Millisecond, MaxDelay: time.Second}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				if d := v.Delay(i % 40); d < 0 || d > time.Second {
					t.Errorf("goroutine %d: Delay(%d) = %v, want in [0, 1s]", g, i%40, d)
					return
				}
				AddJitter(time.Second, time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

func FuzzDelay(f *testing.F) {
	f.Add(int64(100*time.Millisecond), int64(30*time.Second), 2.0, 0.2, uint8(0), 7)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), math.NaN(), math.Inf(1), uint8(3), math.MaxInt)
	f.Add(int64(time.Second), int64(0), 1.0001, -1.0, uint8(2), math.MinInt)
	f.Fuzz(func(t *testing.T, base, ceiling int64, mult, jitter float64, mode uint8, attempt int) {
		v := Value{BaseDelay: time.Duration(base), MaxDelay: time.Duration(ceiling), Multiplier: mult, Jitter: jitter, JitterMode: JitterMode(mode)}
		checkValue(t, v, attempt)
		if attempt < math.MaxInt {
			if g0, g1 := Grow(v.BaseDelay, v.MaxDelay, mult, attempt), Grow(v.BaseDelay, v.MaxDelay, mult, attempt+1); g1 < g0 || g0 < 0 || g1 > ceilingOf(v.MaxDelay) {
				t.Fatalf("Grow(%d, %d, %v, %d…%d) = %d, %d: want non-decreasing in [0, ceiling]", base, ceiling, mult, attempt, attempt+1, g0, g1)
			}
		}
		if d := Widen(v.BaseDelay, jitter); d < max(v.BaseDelay, 0) {
			t.Fatalf("Widen(%d, %v) = %d, want at least the delay", base, jitter, d)
		}
		lo, hi := decorrelateRange(v.BaseDelay, v.MaxDelay, time.Duration(attempt))
		if d := Decorrelate(v.BaseDelay, v.MaxDelay, time.Duration(attempt)); d < lo || d > hi || d < 0 {
			t.Fatalf("Decorrelate(%d, %d, %d) = %d, want in [%d, %d]", base, ceiling, attempt, d, lo, hi)
		}
		if d := AddJitter(v.BaseDelay, v.MaxDelay); d < max(v.BaseDelay, 0) {
			t.Fatalf("AddJitter(%d, %d) = %d, want at least the interval", base, ceiling, d)
		}
	})
}

func FuzzSchedule(f *testing.F) {
	f.Add(int64(time.Millisecond), int64(time.Second), 2.0, 0.2, uint8(2), 5, int64(time.Minute), int64(0), uint64(1), "nnonn")
	f.Add(int64(math.MaxInt64), int64(0), math.Inf(1), math.NaN(), uint8(3), 0, int64(0), int64(time.Second), uint64(7), "oooooooooo")
	f.Add(int64(time.Second), int64(0), 1.5, 0.0, uint8(4), 0, int64(0), int64(-1), uint64(3), "nnnrnn")
	f.Fuzz(func(t *testing.T, base, ceiling int64, mult, jitter float64, mode uint8, maxRetries int, maxElapsed, deadline int64, seed uint64, ops string) {
		synctest.Test(t, func(t *testing.T) {
			// In the bubble the clock stands still at t0; Deadline, when set,
			// is t0+deadline.
			t0 := time.Now()
			s := Schedule{
				Curve:      Value{BaseDelay: time.Duration(base), MaxDelay: time.Duration(ceiling), Multiplier: mult, Jitter: jitter, JitterMode: JitterMode(mode)},
				MaxRetries: maxRetries,
				MaxElapsed: time.Duration(maxElapsed),
				Rand:       rand.New(rand.NewPCG(seed, seed)),
			}
			if deadline != 0 {
				s.Deadline = t0.Add(time.Duration(deadline))
			}
			limit := ceilingOf(s.Curve.MaxDelay)
			stopped, overridden := false, false
			for i, op := range []byte(ops) {
				switch op % 3 {
				case 0:
					s.Override(time.Duration(int64(seed) >> (i % 64)))
					overridden = true
				case 1:
					s.Reset()
					stopped, overridden = false, false
					if s.Err() != nil {
						t.Fatalf("Err() after Reset = %v, want nil", s.Err())
					}
				default:
					before, beforeAttempt := s.Elapsed(), s.Attempt()
					d, ok := s.Next()
					switch {
					case !ok && d != 0:
						t.Fatalf("Next() = %v, false, want 0 with false", d)
					case ok && stopped:
						t.Fatalf("Next() = %v, true after a false, want false until Reset", d)
					case d < 0:
						t.Fatalf("Next() = %v, want non-negative", d)
					case ok && !overridden && d > limit:
						t.Fatalf("Next() = %v, want at most %v", d, limit)
					case ok && s.MaxElapsed > 0 && s.Elapsed() > s.MaxElapsed:
						t.Fatalf("Elapsed() = %v past MaxElapsed %v", s.Elapsed(), s.MaxElapsed)
					case ok && deadline != 0 && d > s.Deadline.Sub(t0):
						t.Fatalf("Next() = %v, true, which ends after Deadline (t0%+v)", d, time.Duration(deadline))
					case ok && s.MaxRetries > 0 && s.Attempt() > s.MaxRetries:
						t.Fatalf("Attempt() = %d past MaxRetries %d", s.Attempt(), s.MaxRetries)
					case ok && (s.Attempt() != beforeAttempt+1 || s.Elapsed() < before):
						t.Fatalf("after Next: Attempt() %d→%d, Elapsed() %v→%v", beforeAttempt, s.Attempt(), before, s.Elapsed())
					case ok && s.Err() != nil:
						t.Fatalf("Next() = %v, true with Err() = %v, want nil", d, s.Err())
					case !ok && s.Err() != ErrMaxRetries && s.Err() != ErrMaxElapsed && s.Err() != ErrDeadline:
						t.Fatalf("Next() = false with Err() = %v, want one of the three limits", s.Err())
					case !ok && s.Err() == ErrMaxRetries && (s.MaxRetries <= 0 || s.Attempt() < s.MaxRetries):
						t.Fatalf("Err() = ErrMaxRetries after %d waits, MaxRetries %d", s.Attempt(), s.MaxRetries)
					case !ok && s.Err() == ErrMaxElapsed && s.MaxElapsed <= 0:
						t.Fatalf("Err() = ErrMaxElapsed without MaxElapsed")
					case !ok && s.Err() == ErrDeadline && deadline == 0:
						t.Fatalf("Err() = ErrDeadline without Deadline")
					}
					stopped = stopped || !ok
					overridden = false
				}
			}
		})
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "99999999999999", "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "-1", "1.5", ""} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, nowUnix int64) {
		now := time.Unix(nowUnix%(1<<40), 0)
		d, ok := ParseRetryAfter(s, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v: want a non-negative wait, and 0 with false", s, d, ok)
		}
		trimmed := strings.TrimSpace(s)
		digits := trimmed != "" && strings.Trim(trimmed, "0123456789") == ""
		if digits && !ok {
			t.Fatalf("ParseRetryAfter(%q) = %v, false, want true for delay-seconds", s, d)
		}
		if trimmed != "" && strings.ContainsAny(trimmed[:1], "+-") && ok {
			t.Fatalf("ParseRetryAfter(%q) = %v, true, want false for a sign", s, d)
		}
	})
}

// Benchmarks. Compare runs with benchstat, never a single figure:
//
//	go test -run '^$' -bench . -benchmem -count 10 > new.txt

var (
	sinkDuration time.Duration
	sinkBool     bool
)

func benchValue(mode JitterMode) Value {
	return Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second, Jitter: 0.2, JitterMode: mode}
}

func BenchmarkDelay(b *testing.B) {
	for _, mode := range definedModes {
		b.Run(mode.String(), func(b *testing.B) {
			v := benchValue(mode)
			for b.Loop() {
				sinkDuration = v.Delay(7)
			}
		})
	}
}

func BenchmarkBounds(b *testing.B) {
	for _, mode := range definedModes {
		b.Run(mode.String(), func(b *testing.B) {
			v := benchValue(mode)
			for b.Loop() {
				_, sinkDuration = v.Bounds(7)
			}
		})
	}
}

// BenchmarkDelayAttempt shows Delay is O(1) in the attempt: 1<<40 costs no
// more than 7, whatever the multiplier.
func BenchmarkDelayAttempt(b *testing.B) {
	for _, mult := range []float64{2, 1.5, 1.0001} {
		for _, attempt := range []int{7, 1 << 40} {
			b.Run(fmt.Sprintf("mult=%v/attempt=%d", mult, attempt), func(b *testing.B) {
				v := Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second, Multiplier: mult}
				for b.Loop() {
					sinkDuration = v.Delay(attempt)
				}
			})
		}
	}
}

func BenchmarkDelayParallel(b *testing.B) {
	for _, mode := range []JitterMode{JitterFull, JitterNone} {
		b.Run(mode.String(), func(b *testing.B) {
			v := benchValue(mode)
			b.RunParallel(func(pb *testing.PB) {
				var d time.Duration
				for pb.Next() {
					d += v.Delay(7)
				}
				sinkDuration = d
			})
		})
	}
}

// BenchmarkNext measures one wait in a long sequence: the schedule is reset
// every 10 waits so it stays on the same part of the curve as Delay(7).
func BenchmarkNext(b *testing.B) {
	for _, mode := range definedModes {
		b.Run(mode.String(), func(b *testing.B) {
			s := Schedule{Curve: benchValue(mode)}
			for b.Loop() {
				if s.Attempt() == 10 {
					s.Reset()
				}
				sinkDuration, sinkBool = s.Next()
			}
		})
	}
}

func BenchmarkNextSeeded(b *testing.B) {
	s := Schedule{Curve: benchValue(JitterFull), Rand: rand.New(rand.NewPCG(1, 2))}
	for b.Loop() {
		if s.Attempt() == 10 {
			s.Reset()
		}
		sinkDuration, sinkBool = s.Next()
	}
}

func BenchmarkGrow(b *testing.B) {
	for _, mult := range []float64{2, 1.5} {
		b.Run(fmt.Sprintf("mult=%v", mult), func(b *testing.B) {
			for b.Loop() {
				sinkDuration = Grow(100*time.Millisecond, 30*time.Second, mult, 7)
			}
		})
	}
}

func BenchmarkHelpers(b *testing.B) {
	d := 6400 * time.Millisecond
	b.Run("Full", func(b *testing.B) {
		for b.Loop() {
			sinkDuration = Full(d)
		}
	})
	b.Run("Equal", func(b *testing.B) {
		for b.Loop() {
			sinkDuration = Equal(d)
		}
	})
	b.Run("Widen", func(b *testing.B) {
		for b.Loop() {
			sinkDuration = Widen(d, 0.2)
		}
	})
	b.Run("Decorrelate", func(b *testing.B) {
		for b.Loop() {
			sinkDuration = Decorrelate(100*time.Millisecond, 30*time.Second, d)
		}
	})
	b.Run("AddJitter", func(b *testing.B) {
		for b.Loop() {
			sinkDuration = AddJitter(time.Minute, 5*time.Second)
		}
	})
	b.Run("NormalMultiplier", func(b *testing.B) {
		m := math.NaN()
		for b.Loop() {
			m = NormalMultiplier(m)
		}
		sinkDuration = time.Duration(m)
	})
	b.Run("NormalJitter", func(b *testing.B) {
		j := 3.0
		for b.Loop() {
			j = NormalJitter(j)
		}
		sinkDuration = time.Duration(j)
	})
}

func BenchmarkParseRetryAfter(b *testing.B) {
	now := time.Date(1994, time.November, 6, 8, 49, 0, 0, time.UTC)
	for _, s := range []string{"120", "Sun, 06 Nov 1994 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"} {
		b.Run(s[:3], func(b *testing.B) {
			for b.Loop() {
				sinkDuration, sinkBool = ParseRetryAfter(s, now)
			}
		})
	}
}

// TestEdgesReached: at the 1ns edges every value of the interval is drawn,
// both ends included.
func TestEdgesReached(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi time.Duration
		draw   func() time.Duration
	}{
		{"Full(1)", 0, 1, func() time.Duration { return Full(1) }},
		{"Equal(1)", 0, 1, func() time.Duration { return Equal(1) }},
		{"Equal(3)", 1, 3, func() time.Duration { return Equal(3) }},
		{"Widen(10, 0.15)", 10, 11, func() time.Duration { return Widen(10, 0.15) }},
		{"Decorrelate(1, 0, 1)", 1, 3, func() time.Duration { return Decorrelate(1, 0, 1) }},
		{"AddJitter(5, 2)", 5, 6, func() time.Duration { return AddJitter(5, 2) }},
		{"Value{1, 1}.Delay(1)", 0, 1, func() time.Duration { return Value{BaseDelay: 1, MaxDelay: 1}.Delay(1) }},
		{"Value{1, 1, ×3}.Delay(1)", 0, 1, func() time.Duration { return Value{BaseDelay: 1, MaxDelay: 1, Multiplier: 3}.Delay(1) }},
		{"Value{1, 4}.Delay(3)", 0, 4, func() time.Duration { return Value{BaseDelay: 1, MaxDelay: 4}.Delay(3) }},
		{"Value{2, equal}.Delay(1)", 1, 2, func() time.Duration { return Value{BaseDelay: 2, MaxDelay: 2, JitterMode: JitterEqual}.Delay(1) }},
		{"Value{10, symmetric 0.1}.Delay(1)", 9, 11, func() time.Duration { return Value{BaseDelay: 10, Jitter: 0.1, JitterMode: JitterSymmetric}.Delay(1) }},
		{"Schedule{1, 1}.Next()", 0, 1, func() time.Duration {
			s := Schedule{Curve: Value{BaseDelay: 1, MaxDelay: 1}}
			d, _ := s.Next()
			return d
		}},
	}
	for _, tt := range tests {
		chiSquareUniform(t, tt.name, tt.lo, int(tt.hi-tt.lo)+1, 4000, tt.draw)
	}
}

// TestRejectionUnbiased: over n = ⌈2^64/2.5⌉ values, a multiply-shift draw
// without its rejection step gives even results 3 chances in 5 and odd
// ones 2: the step is what makes the parity a fair coin. Every path that
// draws from the package-level source is checked.
func TestRejectionUnbiased(t *testing.T) {
	const n = 7378697629483820647 // ⌈2^64/2.5⌉
	g := time.Duration(n - 1)
	s := Schedule{Curve: Value{BaseDelay: g, MaxDelay: g}}
	paths := map[string]func() time.Duration{
		"Full":               func() time.Duration { return Full(g) },
		"Value.Delay":        func() time.Duration { return Value{BaseDelay: g, MaxDelay: g}.Delay(1) },
		"Value.Delay ×1.5":   func() time.Duration { return Value{BaseDelay: g, MaxDelay: g, Multiplier: 1.5}.Delay(1) },
		"Schedule.Next":      func() time.Duration { s.Reset(); d, _ := s.Next(); return d },
		"Decorrelate":        func() time.Duration { return Decorrelate(1, g+1, g) - 1 },
		"Schedule.Next seed": func() time.Duration { return 0 }, // replaced below
	}
	r := rand.New(rand.NewPCG(5, 5))
	seeded := Schedule{Curve: Value{BaseDelay: g, MaxDelay: g}, Rand: r}
	paths["Schedule.Next seed"] = func() time.Duration { seeded.Reset(); d, _ := seeded.Next(); return d }
	const draws = 20000
	for name, draw := range paths {
		even := 0
		for range draws {
			d := draw()
			if d < 0 || d > g {
				t.Fatalf("%s = %d, want in [0, %d]", name, d, g)
			}
			if d%2 == 0 {
				even++
			}
		}
		// A fair coin: 0.5 ± 6 standard errors; the bias would be 0.6.
		if f := float64(even) / draws; math.Abs(f-0.5) > 6*0.5/math.Sqrt(draws) {
			t.Errorf("%s: %.3f of %d draws even, want 0.5: the rejection step is not working", name, f, draws)
		}
	}
}

// TestScheduleDefaultPath checks the path most users take, the zero Rand
// with full jitter doubling under a ceiling: the k-th wait of a sequence
// is uniform over [0, Grow(k)], attempt for attempt.
func TestScheduleDefaultPath(t *testing.T) {
	const sequences = 4000
	v := Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second}
	waits := make([][]time.Duration, 9)
	s := Schedule{Curve: v}
	for range sequences {
		s.Reset()
		for k := range waits {
			d, ok := s.Next()
			if !ok {
				t.Fatalf("Next() = %v, false", d)
			}
			waits[k] = append(waits[k], d)
		}
	}
	for k, ws := range waits {
		lo, hi := v.Bounds(k + 1)
		i := 0
		ksUniform(t, fmt.Sprintf("wait %d", k+1), lo, hi, len(ws), func() time.Duration { i++; return ws[i-1] })
	}
	// The same for JitterNone and JitterEqual, which are deterministic or
	// bounded at both ends, and for the decorrelated loop without a Rand.
	for _, mode := range []JitterMode{JitterNone, JitterEqual, JitterSymmetric} {
		s := Schedule{Curve: Value{BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: 0.3, JitterMode: mode}}
		for k := 1; k <= 12; k++ {
			d, _ := s.Next()
			if lo, hi := s.Curve.Bounds(k); d < lo || d > hi {
				t.Fatalf("%v: wait %d = %v, want in [%v, %v]", mode, k, d, lo, hi)
			}
		}
	}
	s = Schedule{Curve: Value{BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, JitterMode: JitterDecorrelated}}
	prev, seen := 10*time.Millisecond, map[time.Duration]bool{}
	for i := range 200 {
		d, _ := s.Next()
		if hi := min(3*prev, time.Second); d < 10*time.Millisecond || d > hi {
			t.Fatalf("decorrelated, no Rand: wait %d = %v, want in [10ms, %v]", i+1, d, hi)
		}
		prev, seen[d] = d, true
	}
	if len(seen) < 190 {
		t.Errorf("decorrelated, no Rand: %d distinct waits of 200, want them drawn", len(seen))
	}
}

// TestGoldenDegenerateDraws pins a seeded sequence whose first waits have
// one possible value: a draw from a one-value interval must not consume
// randomness, or every later wait moves. A change here changes every
// user's retry timing.
func TestGoldenDegenerateDraws(t *testing.T) {
	s := Schedule{
		Curve: Value{BaseDelay: 1, MaxDelay: 1 << 20, Jitter: 0.5, JitterMode: JitterAdditive},
		Rand:  rand.New(rand.NewPCG(2026, 12)),
	}
	want := []time.Duration{1, 2, 5, 11, 22, 34, 75, 165, 332, 715}
	var got []time.Duration
	for range want {
		d, _ := s.Next()
		got = append(got, d)
	}
	if !equalDurations(got, want) {
		t.Errorf("seeded waits = %#v, want %#v", got, want)
	}
}

// TestScheduleLimitsEdges: the limits at their edges, and the false that
// sticks until Reset even when a limit is raised.
func TestScheduleLimitsEdges(t *testing.T) {
	s := Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterNone}, MaxRetries: 1}
	s.Next()
	if _, ok := s.Next(); ok {
		t.Fatal("Next() past MaxRetries 1 = true")
	}
	s.MaxRetries = 5
	if d, ok := s.Next(); d != 0 || ok {
		t.Fatalf("Next() after false, MaxRetries raised = %v, %v, want 0, false until Reset", d, ok)
	}
	s.Reset()
	if d, ok := s.Next(); d != time.Second || !ok {
		t.Fatalf("Next() after Reset = %v, %v, want 1s, true", d, ok)
	}

	// A MaxElapsed of 1ns is a limit: a 1s wait is refused.
	s = Schedule{Curve: Value{BaseDelay: time.Second}, MaxElapsed: 1}
	if d, ok := s.Next(); d != 0 || ok {
		t.Errorf("MaxElapsed 1ns: Next() = %v, %v, want 0, false", d, ok)
	}
	// Waits of zero never pass a MaxElapsed.
	s = Schedule{MaxElapsed: time.Second}
	for i := range 5 {
		if d, ok := s.Next(); d != 0 || !ok {
			t.Fatalf("zero waits, MaxElapsed 1s: Next() #%d = %v, %v, want 0, true", i+1, d, ok)
		}
	}
	// A wait that lands exactly on MaxElapsed is handed out.
	s = Schedule{Curve: Value{BaseDelay: time.Second, JitterMode: JitterNone}, MaxElapsed: 3 * time.Second}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if d, ok := s.Next(); d != want || !ok {
			t.Fatalf("Next() #%d = %v, %v, want %v, true (total 3s = MaxElapsed)", i+1, d, ok, want)
		}
	}
}

// TestScheduleCountersSaturate sets the counters next to their bounds (no
// test can make 2^63 calls): they saturate instead of wrapping, and the
// curve stays at its ceiling.
func TestScheduleCountersSaturate(t *testing.T) {
	s := Schedule{Curve: Value{BaseDelay: time.Second, MaxDelay: time.Minute, JitterMode: JitterNone}}
	s.attempt, s.step = math.MaxInt-1, math.MaxInt-3
	for i := range 4 {
		if d, ok := s.Next(); d != time.Minute || !ok {
			t.Fatalf("Next() #%d near the bounds = %v, %v, want 1m0s, true", i+1, d, ok)
		}
	}
	if s.Attempt() != math.MaxInt || s.step != math.MaxInt-1 {
		t.Errorf("Attempt() = %d, step = %d, want MaxInt, MaxInt-1 (saturated)", s.Attempt(), s.step)
	}
}
