package httpretry

import (
	"net/http"
	"strings"
)

// replayable reports whether req may be sent more than once: net/http's own
// rule (Request.isReplayable), with PUT and DELETE, which RFC 9110 §9.2.2
// makes idempotent, beside GET, HEAD, OPTIONS and TRACE. An idempotency key
// counts when it has a value that is not empty, or when it is net/http's
// zero-length slice, which marks a request idempotent without sending the
// header; a header sent with an empty value names no key.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return (hasKey(req.Header, "Idempotency-Key") || hasKey(req.Header, "X-Idempotency-Key")) && isToken(req.Method)
}

// hasKey reports whether h holds the idempotency key name: net/http's
// zero-length slice, or a value that is not empty.
func hasKey(h http.Header, name string) bool {
	vv, ok := h[name]
	if !ok {
		return false
	}
	for _, v := range vv {
		if v != "" {
			return true
		}
	}
	return len(vv) == 0
}

// sendable reports whether base can send req at all, judged from the
// request as net/http judges it before sending (or dialing), and refuses
// it each time again: a request with no URL, no host, a port that is not
// a number up to 65535, no Header map, or a header or trailer whose name
// is not an RFC 9110 token or whose value holds a control byte other than
// tab (CR, LF and NUL among them). An *http.Transport also refuses a
// scheme other than http and https; other Bases may serve other schemes.
func sendable(base http.RoundTripper, req *http.Request) bool {
	if req.URL == nil || req.URL.Host == "" || !validPort(req.URL.Port()) || req.Header == nil || !validFields(req.Header) || !validFields(req.Trailer) {
		return false
	}
	if _, ok := base.(*http.Transport); !ok {
		return true
	}
	return req.URL.Scheme == "http" || req.URL.Scheme == "https"
}

// validPort reports whether p is empty or a port a dial can take: digits,
// at most 65535.
func validPort(p string) bool {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		if n = n*10 + int(p[i]-'0'); n > 65535 {
			return false
		}
	}
	return true
}

// validFields reports whether every name in h is a token and no value
// holds a control byte but tab: net/http's validateHeaders.
func validFields(h http.Header) bool {
	for name, vv := range h {
		if !isToken(name) {
			return false
		}
		for _, v := range vv {
			for i := 0; i < len(v); i++ {
				if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
					return false
				}
			}
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token: one or more visible
// ASCII characters, none of them a delimiter.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b <= ' ' || b >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, b) >= 0 {
			return false
		}
	}
	return s != ""
}
