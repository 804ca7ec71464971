// Package httpretry is an [http.RoundTripper] that retries what can be
// sent again, waits as a [retry.Policy] says, widens a server's Retry-After
// so that its clients do not come back together, and returns the last
// response as a client without retries would have:
//
//	client := &http.Client{Transport: &httpretry.Transport{}}
//
// It never reads a request body into memory, never obeys a Retry-After
// past [Transport].MaxRetryAfter, never sleeps into the request's
// deadline, and keeps a retry budget for each host, so that a fleet's
// retries cannot keep a failing host down.
//
// # What it retries
//
// A request is sent more than once only when its method is idempotent by
// RFC 9110 §9.2.2 (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or it carries an
// Idempotency-Key or X-Idempotency-Key header, and its body is nil,
// [http.NoBody], or has GetBody. This is net/http's own rule for resending
// a request on a broken connection (transport.go's isReplayable), with PUT
// and DELETE added, which net/http leaves out only because it cannot know
// whether a request reached the server. A key counts as net/http counts
// it, but for a header sent with an empty value, which names no key; the
// zero-length slice net/http reads as "idempotent, but send no header"
// counts.
//
// Any other request goes to Base once (untouched, but for
// AttemptTimeout's context, which bounds it too), and so does one that
// net/http refuses before sending, each time again, judged from the
// request: no URL, no host, a port that is not a number up to 65535, a nil
// Header, a header or trailer whose name is not a token or whose value
// holds CR, LF, NUL or another control byte but tab, and through an
// [*http.Transport] a scheme other than http and https. Such a request neither spends nor earns a budget. An HTTP
// server on an https URL, which only shows in the reply, is not retried
// either, and its error comes back as Base gave it, so that
// [http.Client] reports [http.ErrSchemeMismatch].
//
// DefaultRetryable, or the Transport's Retryable, chooses which outcomes
// are failures worth another attempt. Policy.Retryable, when set, then
// decides among them as [retry.Do] decides: it is asked with the transport
// error, or with a [*StatusError] for a retried status, and a false ends
// the request there.
//
// A request body is never read into memory: each retry gets a fresh one
// from GetBody, asked for as soon as a response is to be retried, so that
// a GetBody that fails, or returns no body, ends the request before any
// wait, with the response it followed returned as is, and the attempt
// never sent not counted. (When the limits then end the request, GetBody
// was called once more than a body was sent; that one is closed unread.)
//
// # How it waits
//
// As Policy says ([retry.Do], which it runs on), with one change: a
// Retry-After on a 429 or 503 (either form, read by
// [backoff.ParseRetryAfter]; of several, the first) replaces the computed
// wait, widened by backoff.AddJitter(d, max(d/2, time.Second)): clients
// told the same instant otherwise return in it together
// (benchmarks/README.md measures it). So a wait obeyed can reach
// d + max(d/2, 1s), 1.5 × MaxRetryAfter at most for a long one. A
// Retry-After above MaxRetryAfter, before widening, is not obeyed and not
// retried: that response is returned. A Retry-After on any other status
// is ignored. The retry limits and the request's deadline still apply: a
// wait that cannot be followed by an attempt before the deadline is not
// started, and the time an attempt took counts its drain (below).
//
// # What it returns
//
// A response that is not retried, or the last one when it gives up before
// a wait has started (the limits, the deadline rule, the budget, a context
// that ended during the attempt), is returned with a nil error, as a
// client without retries would have returned it: its status, its header,
// and its body, read from the start. Giving up on a transport error
// returns a [*retry.Error] that wraps it. When the context ends during a
// wait, or while a retried body is drained, RoundTrip returns an error
// whose chain holds the context's cause and whose message names the last
// status or error. A response whose Body is nil is read as having
// [http.NoBody], as net/http's Client reads it; a Base that returns
// neither a response nor an error breaks the RoundTripper contract, and
// RoundTrip returns an error that says so.
//
// # A budget per host
//
// Backoff spreads a request's retries; it does not make them fewer, and
// under load that keeps coming, the retries of every request can keep a
// failing host down after the cause is gone. So with a nil Policy.Budget,
// the Transport keeps a [retry.Budget] with the defaults for each host,
// made on first use: a failing host cannot spend another host's retries.
// The budget tells bad luck from overload by what the retries find: a
// retry whose attempt succeeds (or ends on a response not worth retrying)
// is given back, so a host whose requests fail now and then, even 30% of
// its attempts, has them retried as a client without a budget would; a
// retry that fails costs a whole one, which only requests that did not
// fail earn back, a fifth of one each. A new budget holds 10; its room
// fades from those 10 into a tenth of the host's recent successes (each
// counting less by e every 10 seconds), and stays at 10 while retries
// keep being given back, never below one: a busy client has the room to
// retry a burst of failures at once, and a host that fails every request
// gets the retries this Transport had saved for it (at most a tenth of
// its recent successes, or 10), then none until its requests succeed
// again. A retry the budget refuses returns the last response as is, as
// the other limits do. A response not retried because it is not worth
// retrying (2xx, 4xx but 408 and 429) earns; a Retry-After past
// MaxRetryAfter or a GetBody that fails earns nothing. A set
// Policy.Budget is shared by every host; [NoBudget] turns budgets off.
// Hedges (below) take nothing from it, but stop while it has no retry
// left.
//
// Hosts are keyed as net/http keys its connections: the scheme, and
// [net/url.URL.Hostname] and [net/url.URL.Port] with the default port
// filled in, so that "host" and "host:443" are one, in any case. The one
// exception is a name that IDNA maps: net/http sends "bücher.example",
// "BÜCHER.example" and "xn--bcher-kva.example" to one host, which this
// package, with no IDNA mapping in the standard library, keys as two (the
// Unicode spellings, lowered, are one). The Transport keeps at most 1,024
// hosts' budgets: past that it forgets those that are full
// ([retry.Budget.Full]: every retry they allowed given back or earned
// again, or none asked for in 5 minutes; a host forgotten so gets a new
// Budget should it come back), and never one that is not, so that a host
// that fails every request gets a fresh Burst by being forgotten at most
// once in 5 minutes. When all 1,024 owe retries, the hosts beyond share
// one Budget, and a host first met while that one owes retries gets, once
// there is room, a Budget with no Burst: its retries are what its own
// successes earn, so that moving from the shared Budget to one of its own
// gives a failing host nothing.
//
// # A slow dependency
//
// A failing dependency answers fast; a slow one holds the caller. Two
// fields bound it, both off by default. AttemptTimeout bounds each request
// sent until its response headers arrive: past it, that request is
// cancelled and the attempt fails with [ErrAttemptTimeout], which
// DefaultRetryable retries; the body of a response that came in time is
// never cut by it (unlike [http.Client].Timeout's), and its context lives
// until the body is closed or read to its end. A response is in time when
// Base returns it before the timeout's timer has fired: the two are
// settled by one atomic claim, however busy the other copies are.
//
// A [Hedge] sends another copy of a replayable request that has had no
// headers for the hedge delay, fixed or the host's own 95th percentile:
// the first copy whose response Retryable does not retry wins, and
// RoundTrip returns it at once. A copy that fails while another is in
// flight does not end the attempt; when every copy has failed, the
// attempt has, with the outcome of the copy that failed last, and
// retry.Do's rules decide the retry (a failure is retried, after its
// wait, from the budget: no hedge is sent in a retry's place). Each hedge
// has a body of its own from GetBody while the other copies may still be
// sending theirs, so a GetBody must return bodies that do not share a
// reader (those http.NewRequest makes do not; one that rewinds a shared
// file does). Error.Attempts and Event.Attempt count attempts, not
// copies.
//
// Hedges are priced apart from retries. Each host has an allowance of
// its own: an attempt whose first copy answers before the hedge delay,
// needing no hedge, earns 2 × ExtraLoad of one (a tenth, by default), up
// to 100 held, and a new host holds one (none once the Hedge has had to
// forget a host, past 1,024: it may be one it forgot); a hedge takes one.
// So the hedges to a host over any interval are at most 100 plus 2 ×
// ExtraLoad × its attempts, whatever the delay; a hedge never takes the
// retry a 503 needs;
// and none is sent while the host's budget holds no whole retry (its
// retries are failing: overload), nor, since slow answers earn nothing,
// once most answers are slower than the delay (a delay set below the
// host's usual latency, or a host overloaded): in a storm, hedging stops
// by itself.
//
// When Curve.BaseDelay is left zero, a Transport with AttemptTimeout or a
// Hedge waits, before its first retry, up to a tenth of AttemptTimeout
// (without one, the hedge delay), at most 200ms, and twice as long before
// each retry after: the waits scale to the attempt they follow. A
// BaseDelay that is set wins.
//
// Goroutines: a hedged attempt sends each copy, the first too, from a
// goroutine of its own, and the caller waits for the first answer, so
// that no copy holds it once another has answered, whatever Base does
// with a cancelled request; Retryable and GetBody, the caller's code, and
// the Close of a body let go, Base's, are called outside any lock another
// copy needs. A losing copy is cancelled
// at once, and its goroutine ends when Base returns it, with one
// exception, for connections' sake: through an [*http.Transport] to a
// host whose last answer was not HTTP/2, net/http closes the connection of
// a request cancelled in flight, and each new one costs a TCP (and TLS)
// handshake, which slows the requests after, which draws more hedges; so
// a losing copy is left to finish, for at most 1s, its AttemptTimeout and
// the request's deadline, with a context of its own (the request's values
// and deadline, not its cancellation), and its body is drained (64 KiB,
// 100ms at most) and closed, so that its connection goes back to the pool. Over HTTP/2 a
// cancelled copy costs its stream only. So a hedge costs, over HTTP/2,
// one stream; over HTTP/1.1, a second connection while both copies are
// in flight (a new one unless the pool has one idle), the loser's kept
// for the requests after if the pool has room for it; and through any
// other Base, what Base makes of a cancelled request. A hedge helps when
// the slow copy is slow for a reason another copy escapes (a paused
// replica, a lost packet): over loopback, at the same offered load,
// Hedge{} kept p50 and cut p99 over HTTP/1.1, plain and with TLS, and over
// HTTP/2 (by 22–50%), opening 0.1–0.2 connections a hedge more than no
// hedge. Where the client's own load makes the latency, a hedge adds to
// what it cuts: where the cores cap the calls a second, callers in a
// closed loop wait as long on average, hedged or not, so what a hedge
// cuts from the tail goes to the median. Over HTTP/1.1 give the pool the
// connections the load needs (MaxIdleConnsPerHost): net/http's default
// keeps 2 idle a host, so a client with more requests in flight than that
// opens a connection for many of them, hedged or not, and a hedge may
// add more than one (1.2 in a closed loop over plain HTTP/1.1). 64 callers in a closed loop over TLS, on 2 cores shared
// with the server, got p50 32ms without a hedge and 50ms with Hedge{} on
// that default; with MaxIdleConnsPerHost 64, 7.0ms and 7.1ms
// (benchmarks/README.md, "Over real sockets").
//
// The adaptive delay is estimated for each host from the times to headers
// of its copies, in bounded memory (see [Hedge]); a copy cut off before
// its headers, by a timeout or as a loser, counts as known only to be
// longer than the time it ran (censored, in a Kaplan–Meier estimate), so
// that hedging, which cuts losers, never switches itself off.
//
// # Counted
//
// A Transport whose Policy has a Name counts each request it may retry in
// [retry.Stats], under that name and the host ("api.example:443"): the
// outcome, attempts (not copies), waits, why it stopped, and beside them
// the hedges sent and won, the attempt timeouts (of a request it does not
// retry too: a POST without a key), and the tokens of the budget the
// host's last request used, as a gauge; hosts past 1,024 count together as
// "other". Each request counts once, as RoundTrip returns, by the status
// class of the response it returned (retry.Counts.Status: 2xx, 3xx, 4xx,
// 5xx), or as no response when it returned an error; and by its retries,
// hedges and time waited (the histograms of retry.Counts). Its outcome is
// retry's: a response not retried is an answer, so a 404 or a 501 is a
// success at once by kind, and a 4xx or 5xx by class; a 503 out of
// retries returned as is fails by kind, and is a 5xx. It adds no
// allocation to a request that succeeds at once. Transport.OnRetry and
// OnDone see the request with each retry and each end, and OnDone's Cause
// is [retry.ErrBudget] when the budget refused a retry, even when the
// response comes back as is. [Resend] tells a Base how many sends of its
// request came before, as http.request.resend_count counts them
// (github.com/unherd/backoff/otelretry sets it on each resend's span).
//
// # Connections and bodies
//
// A response that is to be retried has up to 64 KiB of its body read into
// memory, for at most 100ms and never past the request's deadline, before
// retry decides: a body that ends there is closed at once, so that its
// connection goes back to the pool, and the response, should no retry
// follow, is returned with what was read. A body longer than that is kept
// open, unread past it, and closed before the wait, which drops its
// connection; one slower than that is cut where it is, and a response
// returned after a cut yields what was read and then an error that says
// so. The runtime's timer goroutine makes the cut; it ends before the
// attempt does.
//
// OnRetry and the Logger see, for a retried status, an Event.Err that is a
// [*StatusError], whose message is the status line ("503 Service
// Unavailable"); the Logger's records carry the method and the URL, with
// any password redacted ([net/url.URL.Redacted]).
//
// A request that succeeds at once allocates nothing beyond what Base
// allocates, once its host has a budget (the first request to a host makes
// it); a Policy.OnRetry adds one allocation a request, and a Logger two
// (TestAllocs). AttemptTimeout adds 4 (the attempt, its context and
// cancel func, the timer); a Hedge that sends no hedge, 7 and a goroutine
// (TestAllocsSlow; through an *http.Transport over HTTP/1.1, 7 more for
// the copies' detached contexts and the watch on the request's:
// BenchmarkRoundTripLoopback). Transport.CloseIdleConnections reaches Base's, so that
// [http.Client.CloseIdleConnections] closes the connections.
package httpretry
