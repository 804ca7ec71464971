package httpretry_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
	"github.com/unherd/backoff/retry"
)

// Two hosts that are not valid UTF-8 ("http://%ff.example/" parses to the
// host "\xff.example", and "%fe" to "\xfe.example"): net/http keys its
// connections by URL.Hostname() as is (its IDNA mapping fails for them,
// and canonicalAddr keeps the name), so they are two hosts.
const review4HostA, review4HostB = "http://%ff.example/", "http://%fe.example/"

// TestReview4HostsNotUTF8CountApart: SPEC "An httpretry Transport counts
// under its Policy's Name, per host", and "Host keys are net/http's:
// URL.Hostname() and URL.Port()"; retry.Stats: a host that is not valid
// UTF-8 is written "\xNN" "so that every row keeps a key of its own".
// One call to each of two such hosts must make two rows, each under its
// own host; they are counted as one row, under a third name.
func TestReview4HostsNotUTF8CountApart(t *testing.T) {
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	p := retry.Policy{Name: unique("review4-hosts-utf8"), Table: retry.NewTable()}
	tr := &httpretry.Transport{Base: base, Policy: p}
	for _, u := range []string{review4HostA, review4HostB} {
		readAll(t, getURL(t, tr, u))
	}
	rows := map[string]uint64{}
	p.Table.Each(func(name, host string, c retry.Counts) {
		if name == p.Name {
			rows[host] = c.Calls()
		}
	})
	want := map[string]uint64{"\xff.example:80": 1, "\xfe.example:80": 1}
	if len(rows) != 2 || rows["\xff.example:80"] != 1 || rows["\xfe.example:80"] != 1 {
		t.Errorf("rows (host: calls) %v, want %v", quote(rows), quote(want))
	}
}

// TestReview4HostsNotUTF8BudgetsApart: SPEC "A budget per host, by
// default ... a failing host cannot spend another host's retries". Host A
// fails every request and spends its 10 retries; host B's first 503 must
// still be retried from B's own fresh Budget. It is refused: A and B
// share one Budget.
func TestReview4HostsNotUTF8BudgetsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		sentB := 0
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			code := 503
			if strings.Contains(req.URL.Host, "\xfe") {
				mu.Lock()
				if sentB++; sentB > 1 {
					code = 200
				}
				mu.Unlock()
			}
			return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		tr := &httpretry.Transport{Base: base, Policy: constant(time.Second, 10)}
		resp := getURL(t, tr, review4HostA) // 11 attempts, 10 retries: A's Burst spent
		readAll(t, resp)
		resp = getURL(t, tr, review4HostB)
		readAll(t, resp)
		if resp.StatusCode != 200 || sentB != 2 {
			t.Errorf("host B after host A spent its budget: %d after %d attempts, want 200 after 2 (B's own budget is fresh)", resp.StatusCode, sentB)
		}
	})
}

// quote writes each host of rows quoted, so that a byte that is not UTF-8
// shows as \xNN.
func quote(rows map[string]uint64) string {
	var b strings.Builder
	for h, n := range rows {
		b.WriteString(strconv.Quote(h) + ":" + strconv.FormatUint(n, 10) + " ")
	}
	return b.String()
}
