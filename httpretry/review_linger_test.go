package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// TestLingerTimerRace: over HTTP/1.1 a losing copy is left to linger;
// decide marks it lingering (CAS) and only then stores its bound timer in
// leg.timer, while the loser's own goroutine, once Base returns, does
// CAS(lingering→returned) and reads leg.timer without the flight's lock.
// Nothing orders the store before the read: run under -race, the race
// detector reports it (and a loser returning between the CAS and the
// store would call Stop on a nil *time.Timer, a panic that catch then
// swallows, leaving the loser's body open).
func TestLingerTimerRace(t *testing.T) {
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

// TestLingerOutlivesDeadline: SPEC, "The request's deadline bounds every
// copy"; doc.go, a losing copy left to finish over HTTP/1.1 has "a context
// of its own (the request's values and deadline, not its cancellation)".
// The detached context reports the deadline but never enforces it (Done
// is nil, Err stays nil past it), so a loser lingers past the request's
// 300ms deadline until the 1s linger bound cuts it.
func TestLingerOutlivesDeadline(t *testing.T) {
	var n atomic.Int64
	cut := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" && n.Add(1) == 1 {
			select {
			case <-r.Context().Done():
				cut <- time.Now()
				return
			case <-time.After(3 * time.Second):
			}
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpretry.Transport{Base: base, Policy: noWait(2), Hedge: &httpretry.Hedge{Delay: 30 * time.Millisecond}}}
	warmUp(t, client, srv.URL, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow", nil)
	resp, err := client.Do(req)
	if err != nil || readAll(t, resp) != "ok" {
		t.Fatalf("hedged request: %v, %v", resp, err)
	}
	select {
	case at := <-cut:
		if took := at.Sub(start); took > 500*time.Millisecond {
			t.Fatalf("the losing copy ran %v, past the request's 300ms deadline; want it bounded by the deadline", took)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("the losing copy was never cut")
	}
}
