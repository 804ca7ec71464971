package httpretry

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestRequestHandlerDerived: a logger derived from the request's, with With
// or WithGroup, still names the method and the URL.
func TestRequestHandlerDerived(t *testing.T) {
	var buf bytes.Buffer
	req, _ := http.NewRequest(http.MethodDelete, "http://bob:pw@api.example/x", nil)
	l := slog.New(&requestHandler{slog.NewTextHandler(&buf, nil), req})
	l.With("k", "v").WithGroup("g").Info("hello", "n", 1)
	if got := buf.String(); !strings.Contains(got, "k=v") || !strings.Contains(got, "g.n=1") ||
		!strings.Contains(got, "g.method=DELETE") || !strings.Contains(got, "g.url=http://bob:xxxxx@api.example/x") {
		t.Fatalf("derived logger wrote %q", got)
	}
}
