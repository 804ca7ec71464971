package httpretry

import (
	"math"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/unherd/backoff/internal/stats"
	"github.com/unherd/backoff/retry"
)

// NoBudget returns a [retry.Budget] that never refuses a retry: set as a
// Transport's Policy.Budget, it turns the budget per host off, so that
// only the Policy's limits bound the retries. Each call returns a Budget
// of its own, so that no change to one reaches another Transport.
func NoBudget() *retry.Budget { return &retry.Budget{Burst: math.Inf(1)} }

// maxHosts is how many hosts a table keeps before it forgets some: a
// client that reaches a million hosts keeps a bounded map.
const maxHosts = 1024

// hostKey names a host as net/http names its connections' ends: scheme,
// host and port, the default port filled in, so that "host" and
// "host:443" are one; scheme and host in lower case.
type hostKey struct{ scheme, host, port string }

func keyOf(u *url.URL) hostKey {
	key := hostKey{strings.ToLower(u.Scheme), lower(u.Hostname()), u.Port()}
	if key.port == "" {
		switch key.scheme {
		case "https":
			key.port = "443"
		case "http":
			key.port = "80"
		}
	}
	return key
}

// lower is strings.ToLower for a name of valid UTF-8; in one that is not,
// only the ASCII letters are lowered, and the other bytes kept, which
// ToLower would each make U+FFFD: net/http keeps "\xff.example" and
// "\xfe.example" apart, and so must their budgets and counts.
func lower(s string) string {
	if utf8.ValidString(s) {
		return strings.ToLower(s)
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// hosts is a value for each host, made on first use, for at most
// maxHosts hosts: a Transport's budgets, a Hedge's estimates, the names
// of the hosts in retry.Stats.
type hosts[V any] struct {
	mu     sync.RWMutex
	m      map[hostKey]*V
	other  *V   // kept: the value every host past a table full of values that may not be forgotten shares
	skip   int  // kept: the new hosts that share other before the table is searched for room again
	forgot bool // it has forgotten a host: one made now may be one it knew
}

// of returns the value for key, making it on first use. To make room, it
// forgets the hosts whose value is spare, then, if that leaves more than
// half the map, hosts chosen at random (in map order), whose values start
// afresh should they be reached again. A request in flight keeps the
// value it took.
func (h *hosts[V]) of(key hostKey, spare func(*V) bool, fresh func(hostKey) *V) *V {
	return h.lookup(key, spare, fresh, nil, false)
}

// again is of for values that must not come back fresher than they were
// forgotten, such as a Hedge's allowance: once the table has forgotten a
// host, a host it makes gets lean(key), for it may be one it forgot.
func (h *hosts[V]) again(key hostKey, fresh, lean func(hostKey) *V) *V {
	return h.lookup(key, never, fresh, lean, false)
}

// kept is of for values that must not be forgotten unless spare, such as
// a Budget that has spent retries it has not earned back: once the table
// holds maxHosts of them, a new host shares one value with every other
// such host, and the table is searched for a spare value again only after
// maxHosts more of them, so that a full table costs a new host no search.
//
// A host first met while the hosts beyond share a value that is not spare
// (so, perhaps, once among them) gets lean(key) in place of fresh(key)
// when room is found: for budgets, one with no Burst, whose retries are
// what its own successes earn, so that a host failing every request gets
// no fresh Burst by moving from the shared value to a place of its own.
func (h *hosts[V]) kept(key hostKey, spare func(*V) bool, fresh, lean func(hostKey) *V) *V {
	return h.lookup(key, spare, fresh, lean, true)
}

// lookup is of, again (lean set), or kept (keep).
func (h *hosts[V]) lookup(key hostKey, spare func(*V) bool, fresh, lean func(hostKey) *V, keep bool) *V {
	h.mu.RLock()
	v := h.m[key]
	h.mu.RUnlock()
	if v != nil {
		return v
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if v = h.m[key]; v != nil {
		return v
	}
	if len(h.m) >= maxHosts {
		if keep && h.skip > 0 {
			h.skip--
			return h.overflow(fresh)
		}
		for key, v := range h.m {
			if spare(v) {
				delete(h.m, key)
				h.forgot = true
			}
		}
		for key := range h.m {
			if keep || len(h.m) < maxHosts/2 {
				break
			}
			delete(h.m, key)
			h.forgot = true
		}
		if len(h.m) >= maxHosts { // kept, and none spare
			h.skip = maxHosts
			return h.overflow(fresh)
		}
	}
	if h.m == nil {
		h.m = make(map[hostKey]*V)
	}
	if keep && h.other != nil && !spare(h.other) || !keep && lean != nil && h.forgot {
		v = lean(key)
	} else {
		v = fresh(key)
	}
	h.m[key] = v
	return v
}

// overflow returns the value the hosts past a full table share.
func (h *hosts[V]) overflow(fresh func(hostKey) *V) *V {
	if h.other == nil {
		h.other = fresh(hostKey{})
	}
	return h.other
}

// full reports whether b may be forgotten ([retry.Budget.Full]): it owes
// no retry, or has gone unasked for 5 minutes.
func full(b *retry.Budget) bool { return b.Full() }

// lean is the Budget of a host first met past a full table, whose
// neighbours there have spent retries: no Burst, so that its retries are
// what its own successes earn.
func lean(hostKey) *retry.Budget { return &retry.Budget{Burst: -1} }

// never is the spare of a table with no value to prefer forgetting.
func never[V any](*V) bool { return false }

// zero makes a new value, as new(V) does.
func zero[V any](hostKey) *V { return new(V) }

// label names a host in retry.Stats: host and port, as net.JoinHostPort
// writes them, "api.example:443".
func label(k hostKey) *hostLabel {
	return &hostLabel{name: net.JoinHostPort(k.host, k.port)}
}

// A hostLabel is a host's name in the table, with the row a Transport
// last counted it in, so that the Transport finds the row without hashing
// the name and the host again: BenchmarkRoundTripNamed, 321ns a request
// where looking the row up in the table took 338 (5 interleaved rounds).
type hostLabel struct {
	name string
	last atomic.Pointer[hostRow]
}

type hostRow struct {
	table *stats.Table
	name  string
	row   *stats.Row
}

// row returns the host's row in table under name, with httpretry's Facts.
func (h *hostLabel) row(table *stats.Table, name string) *stats.Row {
	if r := h.last.Load(); r != nil && r.table == table && r.name == name {
		return r.row
	}
	r := &hostRow{table, name, table.Row(name, h.name, facts)}
	h.last.Store(r)
	return r.row
}
