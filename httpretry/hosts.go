package httpretry

import (
	"math"
	"net"
	"net/url"
	"strings"
	"sync"

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
	key := hostKey{strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()}
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

// hosts is a value for each host, made on first use, for at most
// maxHosts hosts: a Transport's budgets, a Hedge's latency estimates.
type hosts[V any] struct {
	mu sync.RWMutex
	m  map[hostKey]*V
}

// of returns the value for key, making it on first use. To make room,
// it forgets first the hosts whose value is spare (a full Budget, the
// same as a new one), then, if that leaves more than half the map, hosts
// chosen at random (in map order), whose values start afresh should they
// be reached again. A request in flight keeps the value it took.
func (h *hosts[V]) of(key hostKey, spare func(*V) bool, fresh func(hostKey) *V) *V {
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
		for key, v := range h.m {
			if spare(v) {
				delete(h.m, key)
			}
		}
		for key := range h.m {
			if len(h.m) < maxHosts/2 {
				break
			}
			delete(h.m, key)
		}
	}
	if h.m == nil {
		h.m = make(map[hostKey]*V)
	}
	v = fresh(key)
	h.m[key] = v
	return v
}

// full reports whether b holds less than a retry short of what a new one holds,
// its Burst of 10 (which fades while no request earns), and so can be
// forgotten at the cost of less than one retry more, should its host come
// back.
func full(b *retry.Budget) bool { return b.Tokens() > 9 }

// never is the spare of a table with no value to prefer forgetting.
func never[V any](*V) bool { return false }

// zero makes a new value, as new(V) does.
func zero[V any](hostKey) *V { return new(V) }

// label names a host in retry.Stats: host and port, as net.JoinHostPort
// writes them, "api.example:443".
func label(k hostKey) *string {
	s := net.JoinHostPort(k.host, k.port)
	return &s
}
