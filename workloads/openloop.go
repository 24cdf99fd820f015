package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Open-loop defaults.
const (
	// DefaultLagWarn is the schedule lag p99 above which OpenTotals carries
	// a warning.
	DefaultLagWarn = time.Millisecond
	// DefaultIdleConnsPerHost is how many idle keep-alive connections the
	// open-loop transport keeps for reuse.
	DefaultIdleConnsPerHost = 1024
	// MaxOpenArrivals bounds the length of a schedule.
	MaxOpenArrivals = 10_000_000
	// TypeTag is the tag under which a request drawn from a Mix carries
	// its item name.
	TypeTag = "type"
)

// scheduleStream is the PCG stream selector of arrival schedules; the run's
// seed is the PCG state seed. It differs from mixStream, so one seed can
// draw both a schedule and a mix sequence without correlating them.
const scheduleStream = 0x7274746c61622d6f // "rttlab-o"

// OpenRequest is one request of an open-loop run's request list.
type OpenRequest struct {
	// Path is the request path, with a leading /.
	Path string
	// Header adds or overrides request headers for this request only; a
	// "Host" entry sets the Host.
	Header map[string]string
	// Tags are copied into the request's result (e.g. "policy", "route").
	Tags map[string]string
}

// PathRequests returns one untagged OpenRequest per path.
func PathRequests(paths ...string) []OpenRequest {
	out := make([]OpenRequest, len(paths))
	for i, p := range paths {
		out[i] = OpenRequest{Path: p}
	}
	return out
}

// MixRequests turns a drawn mix sequence into open-loop requests, each
// tagged with its item name under TypeTag.
func MixRequests(reqs []Request) []OpenRequest {
	out := make([]OpenRequest, len(reqs))
	for i, r := range reqs {
		out[i] = OpenRequest{Path: r.Path, Tags: map[string]string{TypeTag: r.Type}}
	}
	return out
}

// OpenLoopOptions configures one open-loop run: Poisson arrivals at Rate,
// each request sent at its scheduled time on its own goroutine whatever
// the number already in flight.
//
// The run has Count arrivals, or, when Count is zero, every arrival
// scheduled before Duration. The first Warmup arrivals are warmup
// requests: sent on schedule, emitted with Warmup set, and left out of the
// latency, failure and rate figures of OpenTotals.
//
// The requests are Requests (arrival i sends Requests[i%len(Requests)]) or,
// when Mix is set, a sequence drawn from Mix with Seed, one per arrival,
// tagged with its item name under TypeTag.
type OpenLoopOptions struct {
	// BaseURL is the application's origin, e.g. "http://app:8080".
	BaseURL string
	// Requests is the request list, cycled over the arrivals.
	Requests []OpenRequest
	// Mix, when set instead of Requests, draws one request per arrival.
	Mix *Mix
	// Rate is the target arrival rate in requests per second.
	Rate float64
	// Count is the number of arrivals, warmup included.
	Count int
	// Duration, when Count is zero, schedules every arrival before it.
	Duration time.Duration
	// Warmup is the number of leading warmup arrivals.
	Warmup int
	// Seed seeds the arrival schedule (and the Mix draw): the same seed,
	// rate and count give the same schedule.
	Seed uint64
	// Timeout bounds each request from its actual send until its body is
	// read; zero means DefaultRequestTimeout. A timed-out request is a
	// failure.
	Timeout time.Duration
	// Header holds extra headers for every request; a "Host" entry sets
	// the Host.
	Header map[string]string
	// CopyHeaders names response headers copied into each result's Tags
	// under the name as given (e.g. the backend a router chose). Several
	// values are joined with ",".
	CopyHeaders []string
	// NewConnPerRequest turns keep-alive off: every request dials its own
	// connection and closes it afterwards.
	NewConnPerRequest bool
	// IdleConnsPerHost is the number of idle keep-alive connections kept
	// for reuse; zero means DefaultIdleConnsPerHost. The number of open
	// connections is never capped.
	IdleConnsPerHost int
	// SpinWindow, if positive, is how long before each send time the
	// scheduler stops sleeping and busy-polls the clock instead. Go timers
	// on Linux wake with millisecond granularity, so by default (timers
	// only) sends are typically up to about 1 ms late; a window of 1 ms
	// brings the median lag to microseconds but keeps one core busy for
	// up to that long per arrival (all the time above ~1000 requests/s).
	// It needs a spare core for the requests: with GOMAXPROCS below 2 it
	// is ignored, as the busy loop would hold up the responses it times.
	SpinWindow time.Duration
	// LagWarn is the schedule lag p99 above which the totals carry a
	// warning; zero means DefaultLagWarn, negative never warns.
	LagWarn time.Duration
	// Drain is how long requests in flight may still finish, and be
	// recorded, after ctx ends; zero cancels them at once.
	Drain time.Duration
}

// OpenResult is one request of an open-loop run, streamed as one JSON line.
// The embedded Result's LatencyNS is the latency from the scheduled send
// time, so a late send (schedule lag) counts against the target rather
// than vanishing from the figures.
type OpenResult struct {
	Result
	// ScheduledNS is the scheduled send time, from the run's start.
	ScheduledNS int64 `json:"scheduled_ns"`
	// SentNS is when the request was handed to the transport, from the
	// run's start.
	SentNS int64 `json:"sent_ns"`
	// LagNS is SentNS - ScheduledNS: how late the generator was.
	LagNS int64 `json:"lag_ns"`
	// ServiceNS is the time from the actual send until the body was read
	// and closed; LatencyNS = LagNS + ServiceNS.
	ServiceNS int64 `json:"service_ns"`
	// TimedOut is set when the request ran past the timeout.
	TimedOut bool `json:"timed_out,omitempty"`
	// NewConn is set when the request dialed a new connection.
	NewConn bool `json:"new_conn,omitempty"`
	// Tags are the request's tags plus the copied response headers.
	Tags map[string]string `json:"tags,omitempty"`
}

// Schedule returns the scheduled send time as a Duration.
func (r OpenResult) Schedule() time.Duration { return time.Duration(r.ScheduledNS) }

// Lag returns the schedule lag as a Duration.
func (r OpenResult) Lag() time.Duration { return time.Duration(r.LagNS) }

// Service returns the service latency (from the actual send) as a Duration.
func (r OpenResult) Service() time.Duration { return time.Duration(r.ServiceNS) }

// OpenTotals summarises an open-loop run, including how well the generator
// itself kept its schedule.
//
// Rates count measured arrivals over a window that opens at the last
// warmup arrival's scheduled time (the run's start without warmup):
// OfferedRate is what the schedule itself realised (a Poisson draw around
// TargetRate), SentRate what the generator actually sent, Throughput the
// successful measured requests per second until the last of them
// completed. A target that keeps up has Throughput close to OfferedRate.
type OpenTotals struct {
	// Start is when the schedule's clock started.
	Start       time.Time `json:"start"`
	Seed        uint64    `json:"seed"`
	TargetRate  float64   `json:"target_rate"`
	OfferedRate float64   `json:"offered_rate"`
	SentRate    float64   `json:"sent_rate"`
	Throughput  float64   `json:"throughput"`

	// Scheduled is the length of the schedule; Sent how many requests
	// were handed to the transport (warmup included); Unsent how many
	// arrivals never were, because the run stopped first.
	Scheduled int `json:"scheduled"`
	Sent      int `json:"sent"`
	Unsent    int `json:"unsent"`
	// Recorded is the number of emitted results (warmup included);
	// Canceled the requests cut short by the run's end and not emitted.
	Recorded int `json:"recorded"`
	Canceled int `json:"canceled"`
	// Warmup and Measured split Recorded.
	Warmup   int `json:"warmup"`
	Measured int `json:"measured"`
	// Failures and TimedOut count measured results; timeouts are
	// failures too. WarmupFailures counts failed warmup results.
	Failures       int   `json:"failures"`
	TimedOut       int   `json:"timed_out"`
	WarmupFailures int   `json:"warmup_failures"`
	NewConns       int   `json:"new_conns"`
	Retries        int   `json:"retries"`
	Bytes          int64 `json:"bytes"`
	// MaxInFlight is the largest number of requests sent and not yet
	// finished at any moment.
	MaxInFlight int `json:"max_in_flight"`

	// Schedule lag of every sent request, warmup included.
	LagP50NS int64 `json:"lag_p50_ns"`
	LagP99NS int64 `json:"lag_p99_ns"`
	LagMaxNS int64 `json:"lag_max_ns"`
	// Latency from the scheduled time and service latency of the measured
	// results, failures included (a timeout counts with its latency).
	LatencyP50NS int64 `json:"latency_p50_ns"`
	LatencyP99NS int64 `json:"latency_p99_ns"`
	LatencyMaxNS int64 `json:"latency_max_ns"`
	ServiceP50NS int64 `json:"service_p50_ns"`
	ServiceP99NS int64 `json:"service_p99_ns"`

	ElapsedNS int64 `json:"elapsed_ns"`
	// Warning says when the generator could not keep its schedule: its
	// latencies stay honest (they run from the scheduled time), but the
	// target saw a different arrival process than the one asked for.
	Warning string `json:"warning,omitempty"`
}

// LatencyP99 returns the measured p99 latency from the scheduled time.
func (t OpenTotals) LatencyP99() time.Duration { return time.Duration(t.LatencyP99NS) }

// LagP99 returns the p99 schedule lag.
func (t OpenTotals) LagP99() time.Duration { return time.Duration(t.LagP99NS) }

// PoissonSchedule returns the send times of a Poisson arrival process at
// rate requests per second, as offsets from the run's start: count
// arrivals, or, when count is zero, every arrival before duration. Gaps
// are exponential draws of a PCG generator seeded by seed, so the same
// arguments always give the same schedule. The first arrival comes one gap
// after the start.
func PoissonSchedule(seed uint64, rate float64, count int, duration time.Duration) ([]time.Duration, error) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0 {
		return nil, fmt.Errorf("rate %v requests/s must be positive and finite", rate)
	}
	switch {
	case count < 0:
		return nil, fmt.Errorf("count %d must not be negative", count)
	case duration < 0:
		return nil, fmt.Errorf("duration %s must not be negative", duration)
	case count > 0 && duration > 0:
		return nil, fmt.Errorf("count %d and duration %s both set; give one", count, duration)
	case count == 0 && duration == 0:
		return nil, errors.New("count or duration must be positive")
	case count > MaxOpenArrivals:
		return nil, fmt.Errorf("count %d exceeds %d arrivals", count, MaxOpenArrivals)
	case count == 0 && rate*duration.Seconds() > MaxOpenArrivals/2:
		return nil, fmt.Errorf("rate %v over %s expects %.0f arrivals, more than %d", rate, duration, rate*duration.Seconds(), MaxOpenArrivals/2)
	}
	r := rand.New(rand.NewPCG(seed, scheduleStream))
	var out []time.Duration
	if count > 0 {
		out = make([]time.Duration, 0, count)
	} else {
		out = make([]time.Duration, 0, int(rate*duration.Seconds()*1.1)+16)
	}
	// Sum in float64 seconds so rounding to nanoseconds does not drift.
	t := 0.0
	for {
		t += r.ExpFloat64() / rate
		off := time.Duration(t * 1e9)
		if count == 0 && off >= duration {
			break
		}
		if len(out) >= MaxOpenArrivals {
			return nil, fmt.Errorf("rate %v over %s gives more than %d arrivals", rate, duration, MaxOpenArrivals)
		}
		out = append(out, off)
		if count > 0 && len(out) == count {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no arrival falls within %s at %v requests/s", duration, rate)
	}
	return out, nil
}

// openPlan is a validated open-loop run: the schedule and one prepared
// request per arrival.
type openPlan struct {
	sched     []time.Duration
	templates []*http.Request // per arrival, shared between arrivals
	reqs      []OpenRequest   // per arrival
	timeout   time.Duration
	spin      time.Duration
	lagWarn   time.Duration
	idle      int
}

// plan validates o and prepares its schedule and per-arrival requests.
func (o OpenLoopOptions) plan() (*openPlan, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	sched, err := PoissonSchedule(o.Seed, o.Rate, o.Count, o.Duration)
	if err != nil {
		return nil, err
	}
	if o.Warmup >= len(sched) {
		return nil, fmt.Errorf("%d warmup requests leave none of %d arrivals to measure", o.Warmup, len(sched))
	}

	p := &openPlan{sched: sched, timeout: o.Timeout, spin: o.SpinWindow, lagWarn: o.LagWarn, idle: o.IdleConnsPerHost}
	if p.timeout == 0 {
		p.timeout = DefaultRequestTimeout
	}
	if p.spin < 0 {
		return nil, fmt.Errorf("spin window %s must not be negative", p.spin)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		p.spin = 0
	}
	if p.lagWarn == 0 {
		p.lagWarn = DefaultLagWarn
	}
	if p.idle == 0 {
		p.idle = DefaultIdleConnsPerHost
	}

	list := o.Requests
	if o.Mix != nil {
		seq, err := Sequence(*o.Mix, o.Seed, len(sched))
		if err != nil {
			return nil, err
		}
		list = MixRequests(seq)
	}
	p.reqs = make([]OpenRequest, len(sched))
	for i := range p.reqs {
		p.reqs[i] = list[i%len(list)]
	}
	perEntry, err := o.templates(list)
	if err != nil {
		return nil, err
	}
	p.templates = make([]*http.Request, len(sched))
	for i := range p.templates {
		p.templates[i] = perEntry[i%len(list)]
	}
	return p, nil
}

// check validates the options that need no schedule, first error first.
func (o OpenLoopOptions) check() error {
	if err := CheckBaseURL(o.BaseURL); err != nil {
		return err
	}
	if o.Warmup < 0 {
		return fmt.Errorf("warmup %d must not be negative", o.Warmup)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("timeout %s must not be negative", o.Timeout)
	}
	if o.Drain < 0 {
		return fmt.Errorf("drain %s must not be negative", o.Drain)
	}
	if o.IdleConnsPerHost < 0 {
		return fmt.Errorf("idle connections per host %d must not be negative", o.IdleConnsPerHost)
	}
	for _, h := range o.CopyHeaders {
		if strings.TrimSpace(h) == "" {
			return errors.New("copy headers: empty header name")
		}
	}
	switch {
	case o.Mix != nil && len(o.Requests) > 0:
		return errors.New("requests and mix both set; give one")
	case o.Mix == nil && len(o.Requests) == 0:
		return errors.New("no requests and no mix")
	}
	for i, r := range o.Requests {
		if err := CheckPath(r.Path); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return nil
}

// templates returns one request template per entry of list. Entries
// without headers of their own share one template per path; arrivals only
// derive a per-request context from them on the hot path.
func (o OpenLoopOptions) templates(list []OpenRequest) ([]*http.Request, error) {
	base := strings.TrimRight(o.BaseURL, "/")
	header, host := requestHeader(o.Header)
	byPath := make(map[string]*http.Request)
	perEntry := make([]*http.Request, len(list))
	for i, r := range list {
		if len(r.Header) == 0 {
			if t, ok := byPath[r.Path]; ok {
				perEntry[i] = t
				continue
			}
		}
		t, err := http.NewRequest(http.MethodGet, base+r.Path, nil)
		if err != nil {
			return nil, fmt.Errorf("request %d (%s): %w", i, r.Path, err)
		}
		t.Header, t.Host = header, host
		if len(r.Header) > 0 {
			t.Header = header.Clone()
			for k, v := range r.Header {
				if strings.EqualFold(k, "Host") {
					t.Host = v
					continue
				}
				t.Header.Set(k, v)
			}
		} else {
			byPath[r.Path] = t
		}
		perEntry[i] = t
	}
	return perEntry, nil
}

// newOpenTransport returns a transport that never caps connections per
// host, keeps idle ones for reuse (or none, without keep-alive), speaks
// HTTP/1.1 only, never compresses and never uses a proxy.
func newOpenTransport(timeout time.Duration, idle int, keepAlive bool) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		MaxConnsPerHost:     0,
		MaxIdleConnsPerHost: idle,
		MaxIdleConns:        0,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: timeout,
		DisableCompression:  true,
		DisableKeepAlives:   !keepAlive,
		ForceAttemptHTTP2:   false,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	return tr
}

// openRun is the shared state of one open-loop run.
type openRun struct {
	plan  *openPlan
	opts  *OpenLoopOptions
	tr    *http.Transport
	start time.Time
	emit  func(OpenResult) error

	reqCtx     context.Context // parent of every request; outlives ctx by Drain
	stopRun    context.CancelCauseFunc
	inFlight   atomic.Int64
	wg         sync.WaitGroup
	sentNS     []int64 // per arrival; -1 until sent
	lastWarmup int     // index of the last warmup arrival, -1 without warmup

	mu       sync.Mutex // guards everything below
	tot      OpenTotals
	lat, svc []int64 // measured results
	lastDone int64   // latest measured success completion, from start
	emitErr  error
}

// RunOpenLoop runs one open-loop load run: it computes the Poisson
// schedule up front, then sends each request at its scheduled time on its
// own goroutine, however many are still in flight, over a transport with
// no connection cap.
//
// Each result's latency runs from the request's scheduled send time to the
// end of its body, so time the request spent waiting because the
// generator or the target fell behind is counted (no coordinated
// omission). A non-200 status, a transport error or a timeout is a failure;
// nothing is retried by this client.
//
// emit, if not nil, receives every result as it completes, in completion
// order (not Seq order), one call at a time; an emit error stops the run.
// When ctx ends, no further request is sent; requests in flight get
// opts.Drain to finish (and be emitted), then are cancelled and counted in
// OpenTotals.Canceled. RunOpenLoop returns only after every request it
// started has ended, with the totals of what was recorded and, when ctx
// ended first, an error wrapping ctx's.
func RunOpenLoop(ctx context.Context, opts OpenLoopOptions, emit func(OpenResult) error) (OpenTotals, error) {
	plan, err := opts.plan()
	if err != nil {
		return OpenTotals{}, fmt.Errorf("open-loop options: %w", err)
	}
	tr := newOpenTransport(plan.timeout, plan.idle, !opts.NewConnPerRequest)
	defer tr.CloseIdleConnections()

	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()

	n := len(plan.sched)
	run := &openRun{
		plan: plan, opts: &opts, tr: tr, emit: emit,
		reqCtx: reqCtx, stopRun: stopRun,
		sentNS:     make([]int64, n),
		lastWarmup: opts.Warmup - 1,
		lat:        make([]int64, 0, n-opts.Warmup),
		svc:        make([]int64, 0, n-opts.Warmup),
	}
	for i := range run.sentNS {
		run.sentNS[i] = -1
	}
	run.tot.Seed = opts.Seed
	run.tot.TargetRate = opts.Rate
	run.tot.Scheduled = n

	maxInFlight := run.schedule(runCtx)
	run.wait(ctx, runCtx, cancelReqs)

	tot := run.totals(maxInFlight)
	switch {
	case run.emitErr != nil:
		return tot, run.emitErr
	case ctx.Err() != nil && tot.Unsent > 0:
		return tot, fmt.Errorf("open-loop run stopped with %d of %d arrivals unsent: %w", tot.Unsent, n, ctx.Err())
	case ctx.Err() != nil && tot.Canceled > 0:
		return tot, fmt.Errorf("open-loop run stopped with %d requests in flight: %w", tot.Canceled, ctx.Err())
	}
	return tot, nil
}

// wait waits for the requests in flight; if runCtx ended, it gives them
// the drain time (none after an emit error, when ctx itself has not
// ended), then cancels them with cancelReqs and waits for them to end.
func (run *openRun) wait(ctx, runCtx context.Context, cancelReqs context.CancelFunc) {
	done := make(chan struct{})
	go func() { run.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-runCtx.Done():
		if run.opts.Drain > 0 && ctx.Err() != nil {
			t := time.NewTimer(run.opts.Drain)
			select {
			case <-done:
			case <-t.C:
			}
			t.Stop()
		}
		cancelReqs()
		<-done
	}
}

// schedule sends every arrival at its time until the schedule ends or ctx
// does, and returns the largest number of requests in flight. In-flight
// counts only rise here, so the maximum is taken here too.
func (run *openRun) schedule(ctx context.Context) int {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	spin := run.plan.spin
	maxInFlight := int64(0)
	run.start = time.Now()
	for i, off := range run.plan.sched {
		target := run.start.Add(off)
		if d := time.Until(target) - spin; d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return int(maxInFlight)
			case <-timer.C:
			}
		}
		// A plain busy loop, not one that yields: a goroutine that keeps
		// yielding sits on the global run queue, which the Go scheduler
		// serves before it polls the network, so responses would wait.
		for spin > 0 && time.Now().Before(target) {
			if ctx.Err() != nil {
				return int(maxInFlight)
			}
		}
		if ctx.Err() != nil {
			return int(maxInFlight)
		}
		if v := run.inFlight.Add(1); v > maxInFlight {
			maxInFlight = v
		}
		run.wg.Add(1)
		go run.send(i)
		if spin > 0 {
			// Let the new goroutine start on this P rather than wait for
			// another P to steal it.
			runtime.Gosched()
		}
	}
	return int(maxInFlight)
}

// send performs arrival i and records its result.
func (run *openRun) send(i int) {
	defer run.wg.Done()
	p := run.plan
	var gotConns int
	var newConn bool
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		gotConns++
		if !info.Reused {
			newConn = true
		}
	}}
	traceCtx := httptrace.WithClientTrace(run.reqCtx, trace)

	// The timeout runs from the recorded send time, so a timed-out
	// request's service time is never below the timeout.
	sent := time.Since(run.start)
	run.sentNS[i] = int64(sent)
	rctx, cancel := context.WithDeadline(traceCtx, run.start.Add(sent+p.timeout))
	defer cancel()
	req := p.templates[i].WithContext(rctx)
	resp, err := run.tr.RoundTrip(req)
	var nbytes int64
	status := 0
	var respHeader http.Header
	if err == nil {
		status = resp.StatusCode
		respHeader = resp.Header
		nbytes, err = io.Copy(io.Discard, resp.Body)
		if cerr := resp.Body.Close(); err == nil {
			err = cerr
		}
	}
	done := time.Since(run.start)
	run.inFlight.Add(-1)

	if err != nil && run.reqCtx.Err() != nil {
		run.mu.Lock()
		run.tot.Canceled++
		run.mu.Unlock()
		return
	}

	res := run.timedResult(i, sent, done)
	res.Status, res.Bytes, res.Retried, res.NewConn = status, nbytes, gotConns > 1, newConn
	res.classify(rctx, err, p.timeout)
	res.Tags = run.resultTags(i, respHeader)
	run.record(&res, done)
}

// timedResult returns arrival i's result with its place in the run and
// its timings, from its send time sent and completion time done (both
// from the run's start).
func (run *openRun) timedResult(i int, sent, done time.Duration) OpenResult {
	sched := run.plan.sched[i]
	return OpenResult{
		Result: Result{
			Seq:       i,
			Warmup:    i <= run.lastWarmup,
			Path:      run.plan.reqs[i].Path,
			LatencyNS: int64(done - sched),
		},
		ScheduledNS: int64(sched),
		SentNS:      int64(sent),
		LagNS:       int64(sent - sched),
		ServiceNS:   int64(done - sent),
	}
}

// classify sets r's error, and TimedOut, from its request's error err,
// its context rctx and its status.
func (r *OpenResult) classify(rctx context.Context, err error, timeout time.Duration) {
	switch {
	case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		r.TimedOut = true
		r.Error = "timed out after " + timeout.String() + ": " + err.Error()
	case err != nil:
		r.Error = err.Error()
	case r.Status/100 != 2:
		r.Error = "unexpected status " + strconv.Itoa(r.Status)
	}
}

// resultTags returns arrival i's tags plus the copied response headers,
// or nil when there are none.
func (run *openRun) resultTags(i int, respHeader http.Header) map[string]string {
	tags := run.plan.reqs[i].Tags
	if len(tags) == 0 && len(run.opts.CopyHeaders) == 0 {
		return nil
	}
	out := make(map[string]string, len(tags)+len(run.opts.CopyHeaders))
	for k, v := range tags {
		out[k] = v
	}
	for _, h := range run.opts.CopyHeaders {
		if vs := respHeader.Values(h); len(vs) > 0 {
			out[h] = strings.Join(vs, ",")
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// record adds res, which completed at done from the run's start, to the
// totals and emits it; the first emit error stops the run.
func (run *openRun) record(res *OpenResult, done time.Duration) {
	run.mu.Lock()
	defer run.mu.Unlock()
	t := &run.tot
	t.Recorded++
	t.Bytes += res.Bytes
	if res.NewConn {
		t.NewConns++
	}
	if res.Retried {
		t.Retries++
	}
	if res.Warmup {
		t.Warmup++
		if res.Failed() {
			t.WarmupFailures++
		}
	} else {
		t.Measured++
		run.lat = append(run.lat, res.LatencyNS)
		run.svc = append(run.svc, res.ServiceNS)
		if res.Failed() {
			t.Failures++
			if res.TimedOut {
				t.TimedOut++
			}
		} else if int64(done) > run.lastDone {
			run.lastDone = int64(done)
		}
	}
	if run.emit != nil && run.emitErr == nil {
		if err := run.emit(*res); err != nil {
			run.emitErr = fmt.Errorf("emit result %d: %w", res.Seq, err)
			run.stopRun(run.emitErr)
		}
	}
}

// totals completes the totals once every request has ended.
func (run *openRun) totals(maxInFlight int) OpenTotals {
	t := run.tot
	t.Start = run.start
	t.ElapsedNS = int64(time.Since(run.start))
	t.MaxInFlight = maxInFlight

	p := run.plan
	lags := make([]int64, 0, len(run.sentNS))
	var lastSent int64 = -1
	measuredSent := 0
	for i, s := range run.sentNS {
		if s < 0 {
			t.Unsent++
			continue
		}
		t.Sent++
		lags = append(lags, s-int64(p.sched[i]))
		if i > run.lastWarmup {
			measuredSent++
			lastSent = max(lastSent, s)
		}
	}
	slices.Sort(lags)
	t.LagP50NS, t.LagP99NS, t.LagMaxNS = pctNS(lags, 50), pctNS(lags, 99), pctNS(lags, 100)
	slices.Sort(run.lat)
	slices.Sort(run.svc)
	t.LatencyP50NS, t.LatencyP99NS, t.LatencyMaxNS = pctNS(run.lat, 50), pctNS(run.lat, 99), pctNS(run.lat, 100)
	t.ServiceP50NS, t.ServiceP99NS = pctNS(run.svc, 50), pctNS(run.svc, 99)

	// The measured window opens at the last warmup arrival, so that it
	// holds exactly the measured arrivals of the schedule.
	var open time.Duration
	if run.lastWarmup >= 0 {
		open = p.sched[run.lastWarmup]
	}
	t.OfferedRate = perSecond(len(p.sched)-run.lastWarmup-1, p.sched[len(p.sched)-1]-open)
	if measuredSent > 0 {
		t.SentRate = perSecond(measuredSent, time.Duration(lastSent)-open)
	}
	if ok := t.Measured - t.Failures; ok > 0 {
		t.Throughput = perSecond(ok, time.Duration(run.lastDone)-open)
	}

	if p.lagWarn > 0 && t.Sent > 0 && time.Duration(t.LagP99NS) > p.lagWarn {
		t.Warning = fmt.Sprintf("schedule lag p99 %s (max %s) exceeds %s: the generator sent %.4g requests/s of %.4g offered; latencies still run from the scheduled times",
			time.Duration(t.LagP99NS).Round(time.Microsecond), time.Duration(t.LagMaxNS).Round(time.Microsecond), p.lagWarn, t.SentRate, t.OfferedRate)
		if p.spin == 0 {
			t.Warning += "; sends wait on timers alone (a spin window on a host with a spare core cuts their lag)"
		}
	}
	return t
}

// perSecond returns n per span, or 0 for an empty span.
func perSecond(n int, span time.Duration) float64 {
	if span <= 0 {
		return 0
	}
	return float64(n) / span.Seconds()
}

// pctNS returns the nearest-rank p-th percentile of sorted, 0 when empty.
func pctNS(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
