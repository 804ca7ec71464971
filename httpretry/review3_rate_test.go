package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/backoff/httpretry"
)

// TestReview3OneRequestASecondExtraLoad: SPEC, "A slow dependency": "A
// host sent one request a second is hedged within its first 100
// requests", and "Until a host has enough samples to trust (more than 5,
// at most 100; say how many), it is not hedged." With ExtraLoad 0.01 (the
// 99th percentile), needSamples is 100 by weight, which a host sent one
// request a second never reaches (its weights fade to at most about 84):
// 500 requests a second apart, every 25th slow, and not one is hedged.
func TestReview3OneRequestASecondExtraLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n, hedges atomic.Int64
		base := review3RT(func(req *http.Request) (*http.Response, error) {
			if httpretry.Resend(req.Context()) > 0 {
				hedges.Add(1)
			}
			d := time.Duration(1+n.Add(1)%10) * time.Millisecond
			if n.Load()%25 == 0 {
				d = time.Second
			}
			select {
			case <-time.After(d):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			return review3Resp(req, 200, "ok"), nil
		})
		tr := &httpretry.Transport{Base: base, Hedge: &httpretry.Hedge{ExtraLoad: 0.01}}
		for i := range 500 {
			req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			synctest.Wait()
			if hedges.Load() > 0 {
				if i >= 100 {
					t.Fatalf("first hedged: request %d; want within the first 100", i+1)
				}
				return
			}
			time.Sleep(time.Second)
		}
		t.Fatalf("ExtraLoad 0.01: 500 requests a second apart, every 25th slow (1s against 1–10ms): none hedged; want one within the first 100")
	})
}
