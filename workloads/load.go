package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultRequestTimeout bounds one request (connect, send, headers and body)
// when LoadOptions.Timeout is zero.
const DefaultRequestTimeout = 30 * time.Second

// MaxRequests is the most requests, warmup or measured, that a plan of
// any study may ask one load run for.
const MaxRequests = 1_000_000

// userAgent identifies the load client in application logs unless the
// caller sets its own User-Agent header.
const userAgent = "rttlab-load"

// LoadOptions configures one closed-loop run of the load client.
//
// The request list is either Requests (one path per request, warmup
// requests first, in order) or Route repeated Warmup+Measured times.
type LoadOptions struct {
	// BaseURL is the application's origin, e.g. "http://app:8080".
	BaseURL string
	// Requests lists one path per request, warmup included; the first
	// Warmup entries are warmup requests. When set, Route is ignored and
	// Measured, if non-zero, must equal len(Requests)-Warmup.
	Requests []string
	// Calls lists full requests (method, headers, body), warmup first,
	// for a mix whose requests are not all plain GETs; when set,
	// Requests and Route are ignored and Measured, if non-zero, must
	// equal len(Calls)-Warmup. A request's headers go on top of Header.
	Calls []Request
	// Route is the single path requested when Requests is empty.
	Route string
	// Warmup is the number of warmup requests; Measured the number of
	// measured requests after them.
	Warmup, Measured int
	// Timeout bounds each request; zero means DefaultRequestTimeout.
	Timeout time.Duration
	// Header holds extra request headers; a "Host" entry sets the Host.
	Header map[string]string
	// NewConnPerRequest opens a fresh connection for every request (no
	// keep-alive), so each latency includes the TCP connect.
	NewConnPerRequest bool
	// MarkSeq sends each request's sequence number in SeqHeader, for the
	// captures to join the request on the wire to its latency.
	MarkSeq bool
}

// Result is one request of a load run, streamed as one JSON line.
type Result struct {
	Seq       int    `json:"seq"`
	Warmup    bool   `json:"warmup"`
	Path      string `json:"path"`
	LatencyNS int64  `json:"latency_ns"`
	Status    int    `json:"status"`
	Bytes     int64  `json:"bytes"`
	Error     string `json:"error"`
	// Retried is set when net/http transparently re-sent the request on a
	// fresh connection because the kept-alive one had been closed by the
	// server; the latency then includes the failed attempt and a new dial.
	Retried bool `json:"retried,omitempty"`
}

// Failed reports whether the request counts as a failure: a transport or
// body error, or any status other than 200.
func (r Result) Failed() bool { return r.Error != "" || r.Status/100 != 2 }

// Latency returns the request latency as a Duration.
func (r Result) Latency() time.Duration { return time.Duration(r.LatencyNS) }

// Totals summarises a load run.
type Totals struct {
	Requests         int   `json:"requests"`
	Warmup           int   `json:"warmup"`
	Measured         int   `json:"measured"`
	Failures         int   `json:"failures"`
	MeasuredFailures int   `json:"measured_failures"`
	NewConns         int   `json:"new_conns"`
	Retries          int   `json:"retries"`
	Bytes            int64 `json:"bytes"`
	ElapsedNS        int64 `json:"elapsed_ns"`
}

// plan validates the options and returns the full request list (warmup
// first), the number of warmup requests and the request timeout.
func (o LoadOptions) plan() (base string, paths []string, warmup int, timeout time.Duration, err error) {
	if err := CheckBaseURL(o.BaseURL); err != nil {
		return "", nil, 0, 0, err
	}
	if o.Warmup < 0 || o.Measured < 0 {
		return "", nil, 0, 0, fmt.Errorf("request counts must not be negative (warmup %d, measured %d)", o.Warmup, o.Measured)
	}
	if o.Timeout < 0 {
		return "", nil, 0, 0, fmt.Errorf("timeout %s must not be negative", o.Timeout)
	}
	timeout = o.Timeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	if len(o.Calls) > 0 {
		o.Requests = Paths(o.Calls)
	}
	if len(o.Requests) > 0 {
		if o.Warmup >= len(o.Requests) {
			return "", nil, 0, 0, fmt.Errorf("%d warmup requests leave none of %d requests to measure", o.Warmup, len(o.Requests))
		}
		if o.Measured != 0 && o.Measured != len(o.Requests)-o.Warmup {
			return "", nil, 0, 0, fmt.Errorf("%d requests with %d warmup give %d measured, not %d", len(o.Requests), o.Warmup, len(o.Requests)-o.Warmup, o.Measured)
		}
		paths = o.Requests
	} else {
		if o.Route == "" {
			return "", nil, 0, 0, errors.New("no route and no request list")
		}
		if o.Measured == 0 {
			return "", nil, 0, 0, errors.New("measured requests must be positive")
		}
		paths = make([]string, o.Warmup+o.Measured)
		for i := range paths {
			paths[i] = o.Route
		}
	}
	for i, p := range paths {
		if err := CheckPath(p); err != nil {
			return "", nil, 0, 0, fmt.Errorf("request %d: %w", i, err)
		}
	}
	return strings.TrimRight(o.BaseURL, "/"), paths, o.Warmup, timeout, nil
}

// CheckPath checks that p, a request's path, starts with /.
func CheckPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q must start with /", p)
	}
	return nil
}

// CheckBaseURL checks that base is an http or https origin (optionally
// with a path prefix) without query or fragment.
func CheckBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("base URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("base URL %q: scheme must be http or https", base)
	}
	if u.Host == "" {
		return fmt.Errorf("base URL %q: no host", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("base URL %q: must not carry a query or fragment", base)
	}
	return nil
}

// requestHeader turns header maps into request headers and the Host
// override (a "Host" entry, any case), a later map winning over an
// earlier one, adding the load client's User-Agent unless a map sets one.
func requestHeader(ms ...map[string]string) (header http.Header, host string) {
	n := 1
	for _, m := range ms {
		n += len(m)
	}
	header = make(http.Header, n)
	for _, m := range ms {
		for k, v := range m {
			if strings.EqualFold(k, "Host") {
				host = v
				continue
			}
			header.Set(k, v)
		}
	}
	if header.Get("User-Agent") == "" {
		header.Set("User-Agent", userAgent)
	}
	return header, host
}

// newLoadTransport returns a transport that holds at most one HTTP/1.1
// keep-alive connection, never compresses, and never uses a proxy.
func newLoadTransport(timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		MaxIdleConns:        1,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: timeout,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	return tr
}

// RunLoad runs one closed-loop load run: one client, one keep-alive
// connection, warmup requests then measured requests, each sent only after
// the previous response body was read and closed.
//
// Each request's latency runs on the monotonic clock from just before the
// request is handed to the transport until its body is fully read and
// closed. A non-200 status or a transport error is a failure: it is counted,
// emitted like any other result and never retried by this client. After a
// transport error the next request opens a fresh connection (counted in
// Totals.NewConns). net/http itself re-sends a GET transparently when a
// reused connection turns out to be closed before any response byte; such
// requests are flagged Retried and counted in Totals.Retries.
//
// emit, if not nil, receives every result right after its latency is taken;
// an emit error stops the run. When ctx ends, the run stops; a request cut
// short by ctx is not emitted and the context's error is returned.
func RunLoad(ctx context.Context, opts LoadOptions, emit func(Result) error) (tot Totals, err error) {
	plan, err := opts.prepare()
	if err != nil {
		return Totals{}, err
	}

	tr := newLoadTransport(plan.timeout)
	tr.DisableKeepAlives = opts.NewConnPerRequest
	defer tr.CloseIdleConnections()
	run := &loadRun{ctx: ctx, tr: tr, plan: plan}

	var gotConns, newConns int
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			gotConns++
			if !info.Reused {
				newConns++
			}
		},
	}
	traceCtx := httptrace.WithClientTrace(ctx, trace)

	began := time.Now()
	defer func() {
		tot.NewConns = newConns
		tot.ElapsedNS = int64(time.Since(began))
	}()

	for i, tmpl := range plan.templates {
		if err := ctx.Err(); err != nil {
			return run.tot, fmt.Errorf("load stopped before request %d of %d: %w", i, len(plan.templates), err)
		}
		rctx, cancel := context.WithTimeout(traceCtx, plan.timeout)
		req := tmpl.WithContext(rctx)
		if opts.MarkSeq {
			// The templates are shared between requests: the mark goes
			// on a copy of the header, made before the clock starts.
			req.Header = tmpl.Header.Clone()
			req.Header[SeqHeader] = []string{strconv.Itoa(i)}
		}
		if tmpl.GetBody != nil {
			// Only a request with a body needs a fresh reader of it.
			req.Body, _ = tmpl.GetBody()
		}
		gotConns = 0

		start := time.Now()
		resp, rtErr := tr.RoundTrip(req)
		var n int64
		status := 0
		if rtErr == nil {
			status = resp.StatusCode
			n, rtErr = io.Copy(io.Discard, resp.Body)
			if cerr := resp.Body.Close(); rtErr == nil {
				rtErr = cerr
			}
		}
		lat := time.Since(start)
		cancel()

		if err := run.finish(emit, i, lat, status, n, gotConns > 1, rtErr); err != nil {
			return run.tot, err
		}
	}
	return run.tot, nil
}

// loadPlan is a validated closed-loop run: its request list (warmup
// first) with one prepared request each, and the request timeout.
type loadPlan struct {
	paths     []string
	templates []*http.Request
	warmup    int
	timeout   time.Duration
}

// prepare validates the options and prepares the requests.
func (o LoadOptions) prepare() (loadPlan, error) {
	base, paths, warmup, timeout, err := o.plan()
	if err != nil {
		return loadPlan{}, fmt.Errorf("load options: %w", err)
	}
	templates, err := loadTemplates(base, paths, o.Calls, o.Header)
	if err != nil {
		return loadPlan{}, err
	}
	return loadPlan{paths: paths, templates: templates, warmup: warmup, timeout: timeout}, nil
}

// loadRun is what a closed-loop run needs after each request's latency
// is taken: its context, transport and plan, and the totals so far.
type loadRun struct {
	ctx  context.Context
	tr   *http.Transport
	plan loadPlan
	tot  Totals
}

// finish handles request i once its latency lat is taken: after a
// transport error it ends the run if ctx has ended, else drops the broken
// connection; then it counts the result and passes it to emit, if not
// nil. It returns the error that ends the run.
func (run *loadRun) finish(emit func(Result) error, i int, lat time.Duration, status int, n int64, retried bool, rtErr error) error {
	if rtErr != nil {
		if run.ctx.Err() != nil {
			return fmt.Errorf("load stopped during request %d of %d: %w", i, len(run.plan.templates), run.ctx.Err())
		}
		// Drop whatever is left of the broken connection so the next
		// request dials a fresh one.
		run.tr.CloseIdleConnections()
	}

	res := Result{
		Seq:       i,
		Warmup:    i < run.plan.warmup,
		Path:      run.plan.paths[i],
		LatencyNS: int64(lat),
		Status:    status,
		Bytes:     n,
		Retried:   retried,
	}
	if rtErr != nil {
		res.Error = rtErr.Error()
	} else if status/100 != 2 {
		res.Error = "unexpected status " + strconv.Itoa(status)
	}

	run.tot.add(res)
	if emit != nil {
		if err := emit(res); err != nil {
			return fmt.Errorf("emit result %d: %w", i, err)
		}
	}
	return nil
}

// add counts res in t.
func (t *Totals) add(res Result) {
	t.Requests++
	if res.Warmup {
		t.Warmup++
	} else {
		t.Measured++
	}
	if res.Failed() {
		t.Failures++
		if !res.Warmup {
			t.MeasuredFailures++
		}
	}
	if res.Retried {
		t.Retries++
	}
	t.Bytes += res.Bytes
}

// loadTemplates builds one request template per distinct request, before
// the loop, so that the hot path only derives a per-request context. The
// requests are calls when given, else GETs of paths; the plain GETs share
// one header built from header.
func loadTemplates(base string, paths []string, calls []Request, header map[string]string) ([]*http.Request, error) {
	shared, host := requestHeader(header)
	templates := make([]*http.Request, len(paths))
	byKey := make(map[string]*http.Request)
	for i, p := range paths {
		r := Request{Path: p}
		if calls != nil {
			r = calls[i]
		}
		key := r.key()
		if t, ok := byKey[key]; ok {
			templates[i] = t
			continue
		}
		t, err := NewRequest(context.Background(), base, r)
		if err != nil {
			return nil, fmt.Errorf("request %d (%s): %w", i, p, err)
		}
		h, hh := shared, host
		if !r.plain() {
			h, hh = requestHeader(header, r.Headers)
		}
		t.Header = h
		if hh != "" {
			t.Host = hh
		}
		byKey[key] = t
		templates[i] = t
	}
	return templates, nil
}

// NewRequest builds r against base: its method (GET when empty), its
// headers (a "Host" entry sets the Host) and its body.
func NewRequest(ctx context.Context, base string, r Request) (*http.Request, error) {
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, base+r.Path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req, nil
}

// plain says whether r is a GET with no headers or body of its own.
func (r Request) plain() bool {
	return (r.Method == "" || r.Method == http.MethodGet) && len(r.Headers) == 0 && r.Body == ""
}

// key identifies the distinct request r sends (its type aside).
func (r Request) key() string {
	if r.plain() {
		return r.Path
	}
	var b strings.Builder
	b.WriteString(r.Method + " " + r.Path + "\x00" + r.Body)
	for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
		b.WriteString("\x00" + k + ": " + r.Headers[k])
	}
	return b.String()
}
