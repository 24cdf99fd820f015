package workloads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openCollector gathers emitted open-loop results; emit is serialised by
// RunOpenLoop, the mutex keeps the race detector honest about reads.
type openCollector struct {
	mu  sync.Mutex
	out []OpenResult
}

func (c *openCollector) emit(r OpenResult) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, r)
	return nil
}

func (c *openCollector) sorted() []OpenResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.out)
	slices.SortFunc(out, func(a, b OpenResult) int { return a.Seq - b.Seq })
	return out
}

func TestPoissonScheduleDeterministic(t *testing.T) {
	const rate, n = 250.0, 200_000
	a, err := PoissonSchedule(42, rate, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PoissonSchedule(42, rate, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatal("same seed, rate and count gave different schedules")
	}
	c, err := PoissonSchedule(43, rate, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a[:100], c[:100]) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	if len(a) != n {
		t.Fatalf("%d arrivals, want %d", len(a), n)
	}

	// Gaps of a Poisson process are exponential: mean 1/rate and standard
	// deviation 1/rate. With n = 2e5 the sample mean's standard error is
	// 0.22% of the mean; 2% is about nine of them.
	var sum, sumSq float64
	prev := time.Duration(0)
	for i, off := range a {
		if off < prev {
			t.Fatalf("arrival %d at %s before arrival %d at %s", i, off, i-1, prev)
		}
		g := (off - prev).Seconds()
		sum += g
		sumSq += g * g
		prev = off
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	want := 1 / rate
	if math.Abs(mean-want)/want > 0.02 {
		t.Errorf("mean gap %v, want %v within 2%%", mean, want)
	}
	if math.Abs(sd-want)/want > 0.03 {
		t.Errorf("gap standard deviation %v, want %v within 3%% (exponential gaps)", sd, want)
	}

	// Duration mode: every arrival before the end, and about rate*duration
	// of them (Poisson: sd = sqrt(25000) = 158, 2% is 3.2 sd).
	d, err := PoissonSchedule(7, rate, 0, 100*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if last := d[len(d)-1]; last >= 100*time.Second {
		t.Errorf("last arrival at %s, not before 100s", last)
	}
	if got := float64(len(d)); math.Abs(got-25000)/25000 > 0.02 {
		t.Errorf("%v arrivals in 100s at %v/s, want 25000 within 2%%", got, rate)
	}
	// Duration mode and count mode draw the same process.
	if !slices.Equal(d[:1000], mustSchedule(t, 7, rate, 1000)) {
		t.Error("duration and count schedules of one seed differ")
	}
}

func mustSchedule(t *testing.T, seed uint64, rate float64, n int) []time.Duration {
	t.Helper()
	s, err := PoissonSchedule(seed, rate, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenLoopOptionsRejected(t *testing.T) {
	good := OpenLoopOptions{BaseURL: "http://127.0.0.1:1", Requests: PathRequests("/a"), Rate: 10, Count: 5}
	mix := RedmineMix()
	cases := []struct {
		name string
		mod  func(*OpenLoopOptions)
		want string
	}{
		{"zero rate", func(o *OpenLoopOptions) { o.Rate = 0 }, "rate 0 requests/s must be positive"},
		{"negative rate", func(o *OpenLoopOptions) { o.Rate = -1 }, "must be positive"},
		{"NaN rate", func(o *OpenLoopOptions) { o.Rate = math.NaN() }, "must be positive and finite"},
		{"infinite rate", func(o *OpenLoopOptions) { o.Rate = math.Inf(1) }, "must be positive and finite"},
		{"negative count", func(o *OpenLoopOptions) { o.Count = -1 }, "count -1 must not be negative"},
		{"no count", func(o *OpenLoopOptions) { o.Count = 0 }, "count or duration must be positive"},
		{"count and duration", func(o *OpenLoopOptions) { o.Duration = time.Second }, "give one"},
		{"negative duration", func(o *OpenLoopOptions) { o.Count, o.Duration = 0, -time.Second }, "duration -1s must not be negative"},
		{"huge duration", func(o *OpenLoopOptions) { o.Count, o.Duration, o.Rate = 0, time.Hour, 1e6 }, "more than"},
		{"huge count", func(o *OpenLoopOptions) { o.Count = MaxOpenArrivals + 1 }, "exceeds"},
		{"warmup eats all", func(o *OpenLoopOptions) { o.Warmup = 5 }, "5 warmup requests leave none of 5"},
		{"negative warmup", func(o *OpenLoopOptions) { o.Warmup = -1 }, "warmup -1"},
		{"negative timeout", func(o *OpenLoopOptions) { o.Timeout = -time.Second }, "timeout -1s"},
		{"negative drain", func(o *OpenLoopOptions) { o.Drain = -time.Second }, "drain -1s"},
		{"negative idle", func(o *OpenLoopOptions) { o.IdleConnsPerHost = -1 }, "idle connections"},
		{"negative spin", func(o *OpenLoopOptions) { o.SpinWindow = -time.Millisecond }, "spin window -1ms"},
		{"no requests", func(o *OpenLoopOptions) { o.Requests = nil }, "no requests and no mix"},
		{"requests and mix", func(o *OpenLoopOptions) { o.Mix = &mix }, "requests and mix both set"},
		{"bad path", func(o *OpenLoopOptions) { o.Requests = PathRequests("/a", "b") }, `request 1: path "b" must start with /`},
		{"bad mix", func(o *OpenLoopOptions) { o.Requests, o.Mix = nil, &Mix{Name: "empty"} }, `mix "empty": no items`},
		{"bad scheme", func(o *OpenLoopOptions) { o.BaseURL = "ftp://x" }, "scheme must be http or https"},
		{"no host", func(o *OpenLoopOptions) { o.BaseURL = "http://" }, "no host"},
		{"empty copy header", func(o *OpenLoopOptions) { o.CopyHeaders = []string{"X-A", " "} }, "empty header name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := good
			c.mod(&o)
			tot, err := RunOpenLoop(context.Background(), o, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if tot.Sent != 0 {
				t.Fatalf("sent %d requests despite bad options", tot.Sent)
			}
		})
	}
}

// TestOpenLoopNotCapped: at 200/s against a 20 ms handler about four
// requests are in flight on average; a client that waited for each
// response (or capped connections at one) would never exceed one.
func TestOpenLoopNotCapped(t *testing.T) {
	srv, accepted := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("X-Backend", "b1")
		_, _ = io.WriteString(w, "ok")
	}))
	var c openCollector
	tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: srv.URL, Requests: PathRequests("/feed"),
		Rate: 200, Duration: time.Second, Warmup: 10, Seed: 1,
		Timeout: 20 * time.Second, LagWarn: -1,
	}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("totals: %+v", tot)
	if tot.MaxInFlight <= 1 {
		t.Errorf("max in flight %d: the client serialised its requests", tot.MaxInFlight)
	}
	if tot.Scheduled < 100 {
		t.Fatalf("only %d arrivals in 1 s at 200/s", tot.Scheduled)
	}
	if tot.Sent != tot.Scheduled || tot.Recorded != tot.Scheduled || tot.Unsent != 0 || tot.Canceled != 0 {
		t.Errorf("scheduled %d, sent %d, recorded %d, unsent %d, canceled %d: want all recorded",
			tot.Scheduled, tot.Sent, tot.Recorded, tot.Unsent, tot.Canceled)
	}
	if tot.Failures != 0 || tot.WarmupFailures != 0 || tot.Warmup != 10 || tot.Measured != tot.Scheduled-10 {
		t.Errorf("failures %d+%d, warmup %d, measured %d", tot.Failures, tot.WarmupFailures, tot.Warmup, tot.Measured)
	}
	// A connection dialed for a request that an idle one served first may
	// go unused, so the server can count more than the client's requests saw.
	if got := accepted.Load(); tot.NewConns < 2 || int(got) < tot.NewConns {
		t.Errorf("server accepted %d connections, requests got %d new ones; want several, and no more than accepted", got, tot.NewConns)
	}
	if tot.LatencyP50NS < int64(20*time.Millisecond) {
		t.Errorf("latency p50 %s below the handler's 20 ms", time.Duration(tot.LatencyP50NS))
	}
	if tot.OfferedRate <= 0 || tot.SentRate <= 0 || tot.Throughput <= 0 {
		t.Errorf("rates offered %v sent %v throughput %v", tot.OfferedRate, tot.SentRate, tot.Throughput)
	}

	rs := c.sorted()
	if len(rs) != tot.Recorded {
		t.Fatalf("%d results emitted, totals say %d", len(rs), tot.Recorded)
	}
	sched := mustSchedule(t, 1, 200, len(rs))
	for i, r := range rs {
		if r.Seq != i {
			t.Fatalf("result %d has seq %d", i, r.Seq)
		}
		if r.Warmup != (i < 10) {
			t.Errorf("result %d warmup %v", i, r.Warmup)
		}
		if r.ScheduledNS != int64(sched[i]) {
			t.Errorf("result %d scheduled at %d, schedule says %d", i, r.ScheduledNS, sched[i])
		}
		if r.LagNS < 0 || r.LagNS != r.SentNS-r.ScheduledNS || r.LatencyNS != r.LagNS+r.ServiceNS {
			t.Errorf("result %d: lag %d, sent %d, scheduled %d, service %d, latency %d do not add up",
				i, r.LagNS, r.SentNS, r.ScheduledNS, r.ServiceNS, r.LatencyNS)
		}
		if r.ServiceNS < int64(20*time.Millisecond) || r.Path != "/feed" || r.Status != 200 || r.Bytes != 2 {
			t.Errorf("result %d: %+v", i, r)
		}
		if r.Tags != nil {
			t.Errorf("result %d has tags %v without tags or copied headers", i, r.Tags)
		}
	}
}

// TestOpenLoopNoCoordinatedOmission stalls the whole server once for
// 300 ms (every handler queues behind one lock). Every request scheduled
// during the stall must record a latency from its scheduled time of at
// least the rest of the stall. A closed-loop client against the same
// server records the stall in one request only, since it sends nothing
// while it waits.
func TestOpenLoopNoCoordinatedOmission(t *testing.T) {
	const stall = 300 * time.Millisecond
	type gate struct {
		mu         sync.Mutex
		stalled    bool
		begin, end time.Time
	}
	gatedServer := func(g *gate) string {
		srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.mu.Lock()
			if r.URL.Path == "/stall" && !g.stalled {
				g.stalled = true
				g.begin = time.Now()
				time.Sleep(stall)
				g.end = time.Now()
			}
			g.mu.Unlock()
			_, _ = io.WriteString(w, "ok")
		}))
		return srv.URL
	}
	// 200 arrivals, the stall at the 21st: even a generator that falls
	// a second behind on a starved machine still has arrivals scheduled
	// after the stall begins.
	paths := make([]string, 200)
	for i := range paths {
		paths[i] = "/ok"
	}
	paths[20] = "/stall"

	// Open loop: 200/s, so about 60 arrivals fall within the stall.
	var g gate
	var c openCollector
	tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: gatedServer(&g), Requests: PathRequests(paths...),
		Rate: 200, Count: len(paths), Seed: 3, Timeout: 20 * time.Second, LagWarn: -1,
	}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	if !g.stalled || tot.Failures != 0 || tot.Recorded != len(paths) {
		t.Fatalf("stalled %v, failures %d, recorded %d", g.stalled, tot.Failures, tot.Recorded)
	}
	during, firstHalf, slowOpen := 0, 0, 0
	for _, r := range c.sorted() {
		if r.Latency() >= stall/2 {
			slowOpen++
		}
		at := tot.Start.Add(r.Schedule())
		if at.Before(g.begin) || !at.Before(g.end) {
			continue
		}
		during++
		if at.Sub(g.begin) < stall/2 {
			firstHalf++
		}
		if rest := g.end.Sub(at); r.Latency() < rest {
			t.Errorf("request %d scheduled %s into the stall: latency %s, below the %s left of it",
				r.Seq, at.Sub(g.begin), r.Latency(), rest)
		}
	}
	if (during < 5 || firstHalf < 3) && tot.LagMaxNS > int64(stall) {
		t.Skipf("the generator fell %s behind (CPU starved), so only %d arrivals were scheduled during the stall",
			time.Duration(tot.LagMaxNS), during)
	}
	if during < 5 || firstHalf < 3 {
		t.Fatalf("only %d arrivals scheduled during the %s stall, %d in its first half", during, stall, firstHalf)
	}

	// Closed loop on a fresh server: the stall shows in its one request.
	var g2 gate
	var closed []Result
	if _, err := RunLoad(context.Background(), LoadOptions{BaseURL: gatedServer(&g2), Requests: paths, Timeout: 20 * time.Second}, collect(&closed)); err != nil {
		t.Fatal(err)
	}
	slowClosed := 0
	for _, r := range closed {
		if r.Latency() >= stall/2 {
			slowClosed++
		}
	}
	// Every open-loop arrival in the stall's first half waited over half
	// the stall; the closed loop sent only the stalled request meanwhile.
	t.Logf("%d open-loop arrivals during the stall (%d in its first half); requests over %s: open loop %d, closed loop %d",
		during, firstHalf, stall/2, slowOpen, slowClosed)
	if slowOpen < firstHalf || slowClosed < 1 || slowClosed >= slowOpen {
		t.Errorf("requests over %s: open loop %d (want at least %d), closed loop %d (want at least 1 and fewer)", stall/2, slowOpen, firstHalf, slowClosed)
	}
}

func TestOpenLoopCancelReturnsPartial(t *testing.T) {
	before := runtime.NumGoroutine()
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "ok")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	var c openCollector
	var emitted atomic.Int64
	time.AfterFunc(600*time.Millisecond, cancel)
	began := time.Now()
	tot, err := RunOpenLoop(ctx, OpenLoopOptions{
		BaseURL: srv.URL, Requests: PathRequests("/slow"),
		Rate: 200, Duration: 20 * time.Second, Seed: 5, LagWarn: -1,
	}, func(r OpenResult) error { emitted.Add(1); return c.emit(r) })
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	t.Logf("after %s: %+v", took, tot)
	if took > 10*time.Second {
		t.Errorf("run took %s after a cancel at 600ms", took)
	}
	if tot.Unsent == 0 || tot.Sent == 0 || tot.Sent+tot.Unsent != tot.Scheduled {
		t.Errorf("scheduled %d, sent %d, unsent %d", tot.Scheduled, tot.Sent, tot.Unsent)
	}
	if tot.Recorded+tot.Canceled != tot.Sent || int64(tot.Recorded) != emitted.Load() {
		t.Errorf("sent %d, recorded %d, canceled %d, emitted %d", tot.Sent, tot.Recorded, tot.Canceled, emitted.Load())
	}
	if tot.Canceled == 0 {
		t.Errorf("no request in flight was cancelled (max in flight %d)", tot.MaxInFlight)
	}
	for _, r := range c.sorted() {
		if r.Failed() {
			t.Errorf("recorded a failed request: %+v", r)
		}
	}

	srv.Close()
	waitGoroutines(t, before)
}

func TestOpenLoopDrainRecordsInFlight(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(400*time.Millisecond, cancel)
	tot, err := RunOpenLoop(ctx, OpenLoopOptions{
		BaseURL: srv.URL, Requests: PathRequests("/x"),
		Rate: 100, Duration: 20 * time.Second, Seed: 6, LagWarn: -1, Drain: 10 * time.Second,
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if tot.Canceled != 0 || tot.Recorded != tot.Sent || tot.Failures != 0 || tot.Sent == 0 {
		t.Errorf("with a drain: sent %d, recorded %d, canceled %d, failures %d", tot.Sent, tot.Recorded, tot.Canceled, tot.Failures)
	}
}

// waitGoroutines waits until the goroutine count is back to before.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before the run:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOpenLoopTimeoutsAreFailures(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer close(release)
	const timeout = 300 * time.Millisecond
	var c openCollector
	tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: srv.URL, Requests: PathRequests("/ok", "/hang"),
		Rate: 50, Count: 20, Seed: 8, Timeout: timeout, LagWarn: -1,
	}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	// Every /hang times out; an /ok request normally does not, but may
	// on a starved machine, so only consistency is asserted for those.
	timedOut := 0
	for _, r := range c.sorted() {
		hang := r.Path == "/hang"
		if hang && !r.TimedOut {
			t.Errorf("result %d (/hang) did not time out: %+v", r.Seq, r)
		}
		if !r.TimedOut {
			if r.Failed() {
				t.Errorf("result %d (%s) failed without timing out: %+v", r.Seq, r.Path, r)
			}
			continue
		}
		timedOut++
		if !r.Failed() || !strings.HasPrefix(r.Error, "timed out after 300ms") || r.Service() < timeout {
			t.Errorf("result %d: failed %v, error %q, service %s", r.Seq, r.Failed(), r.Error, r.Service())
		}
	}
	if tot.Recorded != 20 || tot.TimedOut != timedOut || tot.Failures != timedOut || timedOut < 10 {
		t.Fatalf("recorded %d, timed out %d, failures %d; results show %d timeouts (want at least 10)", tot.Recorded, tot.TimedOut, tot.Failures, timedOut)
	}
	if tot.LatencyMaxNS < int64(timeout) {
		t.Errorf("latency max %s leaves out the timeouts", time.Duration(tot.LatencyMaxNS))
	}
}

func TestOpenLoopTagsHeadersAndMix(t *testing.T) {
	srv, accepted := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", "host-"+r.Header.Get("X-Policy"))
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		_, _ = io.WriteString(w, r.Host)
	}))
	reqs := []OpenRequest{
		{Path: "/r", Header: map[string]string{"X-Policy": "p1"}, Tags: map[string]string{"policy": "p1"}},
		{Path: "/r", Header: map[string]string{"X-Policy": "p2", "Host": "other.example"}, Tags: map[string]string{"policy": "p2"}},
	}
	var c openCollector
	tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: srv.URL, Requests: reqs, Rate: 200, Count: 10, Seed: 9, LagWarn: -1,
		Header:      map[string]string{"Host": "app.example"},
		CopyHeaders: []string{"X-Backend", "x-multi", "X-Absent"}, NewConnPerRequest: true,
	}, c.emit)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Failures != 0 || tot.NewConns != 10 || accepted.Load() != 10 {
		t.Errorf("failures %d, new conns %d, accepted %d; want 0, 10, 10 without keep-alive", tot.Failures, tot.NewConns, accepted.Load())
	}
	for _, r := range c.sorted() {
		p := "p1"
		host := int64(len("app.example"))
		if r.Seq%2 == 1 {
			p, host = "p2", int64(len("other.example"))
		}
		want := map[string]string{"policy": p, "X-Backend": "host-" + p, "x-multi": "a,b"}
		if !mapsEqual(r.Tags, want) || r.Bytes != host || !r.NewConn {
			t.Errorf("result %d: tags %v (want %v), bytes %d (want %d), new conn %v", r.Seq, r.Tags, want, r.Bytes, host, r.NewConn)
		}
	}
	// The request's tag map is copied, not shared.
	if len(reqs[0].Tags) != 1 {
		t.Errorf("request tags changed to %v", reqs[0].Tags)
	}

	// A mix draws one request per arrival with the run's seed, tagged by type.
	mix := Mix{Name: "m", Items: []MixItem{
		{Name: "a", Weight: 1, Path: func(r *rand.Rand) string { return "/a" }},
		{Name: "b", Weight: 1, Path: func(r *rand.Rand) string { return "/b" }},
	}}
	var m openCollector
	if _, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: srv.URL, Mix: &mix, Rate: 500, Count: 40, Seed: 11, LagWarn: -1,
	}, m.emit); err != nil {
		t.Fatal(err)
	}
	seq, err := Sequence(mix, 11, 40)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.sorted() {
		if r.Path != seq[r.Seq].Path || r.Tags[TypeTag] != seq[r.Seq].Type || len(r.Tags) != 1 {
			t.Errorf("result %d: path %s tags %v, sequence says %+v", r.Seq, r.Path, r.Tags, seq[r.Seq])
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestOpenLoopEmitErrorStops(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	boom := errors.New("disk full")
	calls := 0
	tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: srv.URL, Requests: PathRequests("/x"), Rate: 100, Duration: 20 * time.Second, Seed: 2, LagWarn: -1,
	}, func(OpenResult) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the emit error", err)
	}
	if calls != 3 || tot.Unsent == 0 {
		t.Errorf("emit called %d times, %d arrivals unsent", calls, tot.Unsent)
	}
}

func TestOpenLoopLagWarning(t *testing.T) {
	// A slow emit does not delay sends, so force lag another way: a
	// schedule far denser than timers and goroutine starts can follow,
	// with the warning bound at its smallest.
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
		BaseURL: srv.URL, Requests: PathRequests("/x"), Rate: 1e6, Count: 300, Seed: 4,
		LagWarn: time.Nanosecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tot.LagP99NS <= 1 || !strings.Contains(tot.Warning, "schedule lag p99") {
		t.Errorf("lag p99 %s, warning %q", time.Duration(tot.LagP99NS), tot.Warning)
	}
	if tot.LagMaxNS < tot.LagP99NS || tot.LagP99NS < tot.LagP50NS {
		t.Errorf("lag p50 %d p99 %d max %d out of order", tot.LagP50NS, tot.LagP99NS, tot.LagMaxNS)
	}
	// The warning gives the lags to the microsecond, not the nanosecond.
	lags := regexp.MustCompile(`p99 \S+ \(max \S+\)`).FindString(tot.Warning)
	if sub := regexp.MustCompile(`\d\.\d{4,}ms|\d\.\d{4,}s\b|\d+ns`).FindString(lags); lags == "" || sub != "" {
		t.Errorf("warning %q gives %q finer than a microsecond", tot.Warning, sub)
	}
}

func TestOpenResultJSONLRoundTrip(t *testing.T) {
	in := []OpenResult{
		{Result: Result{Seq: 0, Warmup: true, Path: "/a", LatencyNS: 30, Status: 200, Bytes: 5}, ScheduledNS: 10, SentNS: 15, LagNS: 5, ServiceNS: 25, NewConn: true},
		{Result: Result{Seq: 1, Path: "/b", LatencyNS: 99, Error: "timed out after 1s: x"}, ScheduledNS: 20, SentNS: 20, ServiceNS: 99, TimedOut: true,
			Tags: map[string]string{"policy": "p", "X-Backend": "h"}},
	}
	var buf bytes.Buffer
	w := NewOpenResultWriter(&buf)
	for _, r := range in {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(buf.String(), `"latency_ns":30,`) || !strings.Contains(buf.String(), `"scheduled_ns":10,`) {
		t.Errorf("embedded result fields not flattened: %s", buf.String())
	}
	out, err := DecodeOpenResults(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("%d results back", len(out))
	}
	for i := range in {
		if in[i].Result != out[i].Result || in[i].ScheduledNS != out[i].ScheduledNS || in[i].LagNS != out[i].LagNS ||
			in[i].TimedOut != out[i].TimedOut || in[i].NewConn != out[i].NewConn || !mapsEqual(in[i].Tags, out[i].Tags) {
			t.Errorf("result %d: wrote %+v, read %+v", i, in[i], out[i])
		}
	}

	bad := []struct{ line, want string }{
		{`{"seq":0,"warmup":false,"path":"/","latency_ns":1,"status":200,"bytes":0,"error":""}`, `missing field "scheduled_ns"`},
		{`{"seq":0,"warmup":false,"path":"/","latency_ns":1,"status":200,"bytes":0,"error":"","scheduled_ns":1,"sent_ns":1,"lag_ns":0,"service_ns":1,"extra":1}`, `unknown field "extra"`},
		{`{"seq":0,"warmup":false,"path":"/","latency_ns":1,"status":200,"error":"","scheduled_ns":1,"sent_ns":1,"lag_ns":0,"service_ns":1}`, `missing field "bytes"`},
		{`{"seq":0,"warmup":false,"path":"/","latency_ns":1,"status":200,"bytes":0,"error":"","scheduled_ns":-1,"sent_ns":1,"lag_ns":0,"service_ns":1}`, "negative time"},
	}
	for _, b := range bad {
		_, err := DecodeOpenResults(strings.NewReader("\n" + b.line + "\n"))
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), b.want) {
			t.Errorf("line %s: error %v, want a line 2 error containing %q", b.line, err, b.want)
		}
	}
}
