package httpretry

import (
	"math"
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

// maxHosts is how many hosts' budgets a Transport keeps before it forgets
// some: a client that reaches a million hosts keeps a bounded map.
const maxHosts = 1024

// budgets is a Transport's Budget for each host, made on first use.
type budgets struct {
	mu sync.RWMutex
	m  map[hostKey]*retry.Budget
}

// hostKey names a host as net/http names its connections' ends: scheme,
// host and port, the default port filled in, so that "host" and
// "host:443" are one; scheme and host in lower case.
type hostKey struct{ scheme, host, port string }

// of returns the Budget for u's host, making it on first use.
func (b *budgets) of(u *url.URL) *retry.Budget {
	key := hostKey{strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()}
	if key.port == "" {
		switch key.scheme {
		case "https":
			key.port = "443"
		case "http":
			key.port = "80"
		}
	}
	b.mu.RLock()
	budget := b.m[key]
	b.mu.RUnlock()
	if budget != nil {
		return budget
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if budget = b.m[key]; budget == nil {
		if len(b.m) >= maxHosts {
			b.forget()
		}
		if b.m == nil {
			b.m = make(map[hostKey]*retry.Budget)
		}
		budget = &retry.Budget{}
		b.m[key] = budget
	}
	return budget
}

// forget makes room in a full map. A full Budget is the same as a new one,
// so the hosts whose budget is full go first; if that leaves more than half
// the map, hosts chosen at random (in map order) go too, and theirs start
// afresh, with 10 retries, should they be reached again. A request in
// flight keeps the Budget it took, so forgetting costs at most a host's
// Burst once more.
func (b *budgets) forget() {
	for key, budget := range b.m {
		if budget.Tokens() >= 10 {
			delete(b.m, key)
		}
	}
	for key := range b.m {
		if len(b.m) < maxHosts/2 {
			break
		}
		delete(b.m, key)
	}
}
