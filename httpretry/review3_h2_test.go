package httpretry

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestReview3H2LoserCancelledAtOnce: doc.go, "A losing copy is cancelled
// at once, and its goroutine ends when Base returns it, with one
// exception ...: through an *http.Transport to a host whose last answer
// was not HTTP/2 ... a losing copy is left to finish, for at most 1s";
// "Over HTTP/2 a cancelled copy costs its stream only". SPEC: "once
// RoundTrip returns, the losing copies are cancelled". An adaptive Hedge
// sends its first requests unhedged (no estimate yet), through flight.once,
// which never notes the protocol (hedgeHost.saw): so the first hedged
// request to a host whose every answer came over HTTP/2 treats it as
// HTTP/1.1, and its losing copy is left running for a second.
func TestReview3H2LoserCancelledAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		var loserEnded atomic.Int64 // ns after t0 the loser's server context ended
		var sends atomic.Int64
		t0 := time.Now()
		n, base := newPipeNet(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				w.WriteHeader(500)
				return
			}
			if slow.Load() && sends.Add(1) == 1 { // the slow request's first copy hangs
				<-r.Context().Done()
				loserEnded.Store(int64(time.Since(t0)))
				return
			}
			time.Sleep(5 * time.Millisecond)
			io.WriteString(w, "ok")
		}), true)
		defer n.close(base)
		h := &Hedge{}
		tr := &Transport{Base: base, Hedge: h}
		get := func() time.Time {
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 {
				t.Fatalf("answer over HTTP/%d.%d, want HTTP/2", resp.ProtoMajor, resp.ProtoMinor)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return time.Now()
		}
		key := hostKey{"http", "api.example", "80"}
		for i := 0; ; i++ {
			get()
			if hh := h.hosts.m[key]; hh != nil && hh.lat.estimate() > 0 {
				break
			}
			if i > 200 {
				t.Fatal("no estimate after 200 requests")
			}
		}
		slow.Store(true)
		returned := get()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		ended := t0.Add(time.Duration(loserEnded.Load()))
		if loserEnded.Load() == 0 || ended.Sub(returned) > 10*time.Millisecond {
			t.Fatalf("over HTTP/2, the losing first copy was cancelled %v after RoundTrip returned; want at once (its stream only)", ended.Sub(returned))
		}
	})
}
