package httpretry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// TestZZLingerTimerRace: over HTTP/1.1 a losing copy is left to linger;
// decide marks it lingering (CAS) and only then stores its bound timer in
// leg.timer, while the loser's own goroutine, once Base returns, does
// CAS(lingering→returned) and reads leg.timer without the flight's lock.
// Nothing orders the store before the read: run under -race, the race
// detector reports it (and a loser returning between the CAS and the
// store would call Stop on a nil *time.Timer, a panic that catch then
// swallows, leaving the loser's body open).
func TestZZLingerTimerRace(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" && n.Add(1) == 1 {
			time.Sleep(150 * time.Millisecond) // the loser answers on its own, not released by the test
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(2), Hedge: &httpretry.Hedge{Delay: 30 * time.Millisecond}}}
	warmUp(t, client, srv.URL, 1)
	resp, err := client.Get(srv.URL + "/slow")
	if err != nil || readAll(t, resp) != "ok" {
		t.Fatalf("hedged request: %v, %v", resp, err)
	}
	time.Sleep(400 * time.Millisecond) // the loser answers, and settles, meanwhile
}
