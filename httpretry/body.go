package httpretry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// StatusError is a retried status, as retry sees it: the error of an
// attempt whose response Retryable (or DefaultRetryable) retries. Its
// message is the status line, "503 Service Unavailable". Policy.Retryable,
// OnRetry (in Event.Err) and the Logger get one for each retried status,
// and so does the error RoundTrip returns when the context ends during a
// wait; [errors.As] finds it. Read the Response's status and header: its
// body belongs to the Transport, which reads it for the connection's sake
// and closes it before the wait.
type StatusError struct {
	Response *http.Response

	drained bool // its body was read for a retry: Body replays what was read
	waited  bool // a wait began after it: its body is closed, and it is not returned
	hedges  int  // the hedges of its attempt, for the table
}

func (e *StatusError) Error() string {
	if s := e.Response.Status; s != "" {
		return s
	}
	code := e.Response.StatusCode
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// drain reads up to drainLimit of the body into memory, for up to
// drainTime and never past ctx's deadline, and puts in its place a body
// that yields what was read and then the rest, so that the response can
// still be returned as it came should no retry follow. A body that ends
// within the bounds is closed at once, so that its connection goes back to
// the pool before any wait; one that does not is closed by waiting, or by
// whoever reads the response. A body slower than the bounds is cut where
// it is (the Close ends a Read blocked in net/http's body), and yields,
// after what was read, an error that says so.
func (e *StatusError) drain(ctx context.Context) {
	body := e.Response.Body
	limit := drainTime
	if deadline, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(deadline))
	}
	cut := make(chan struct{})
	timer := time.AfterFunc(limit, func() { body.Close(); close(cut) })
	var buf bytes.Buffer
	// The cut's Close ends a Read blocked in net/http's body; between Reads,
	// cutting stops a body whose Close does not, one Read at most late.
	_, err := io.CopyN(&buf, cutting{body, cut}, drainLimit)
	if !timer.Stop() {
		<-cut // the cut ran: it ends here, not after the attempt
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
			if done := ctx.Done(); done != nil {
				<-done // the deadline's own timer fires in this instant too: let the context say so
			}
		}
		if err != io.EOF {
			err = fmt.Errorf("httpretry: the body of this %q was cut after %v, while read to decide on a retry", e.Error(), limit)
		}
	}
	r := &replay{data: buf.Bytes()}
	switch err {
	case io.EOF:
		body.Close()
	case nil:
		r.rest = body // longer than drainLimit: unread past it until a wait closes it
	default:
		r.err = err
		body.Close()
	}
	e.Response.Body, e.drained = r, true
}

// cutting reads r until cut is closed.
type cutting struct {
	r   io.Reader
	cut <-chan struct{}
}

func (c cutting) Read(p []byte) (int, error) {
	select {
	case <-c.cut:
		return 0, io.ErrUnexpectedEOF
	default:
		return c.r.Read(p)
	}
}

// replay is a drained body: what was read, then the rest of the body, or
// the error that ended the read.
type replay struct {
	data []byte
	rest io.ReadCloser
	err  error
}

func (r *replay) Read(p []byte) (int, error) {
	switch {
	case len(r.data) > 0:
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	case r.rest != nil:
		return r.rest.Read(p)
	case r.err != nil:
		return 0, r.err
	}
	return 0, io.EOF
}

func (r *replay) Close() error {
	if rest := r.rest; rest != nil {
		r.rest = nil
		return rest.Close()
	}
	return nil
}
