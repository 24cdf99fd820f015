package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/workloads"
)

// fakeLab is a enginefake.Engine scripted as a healthy rttlab stack: PostgreSQL
// answers pg_isready and psql (with a pg_stat_statements counter), the
// agents hold a delay per side and answer ctl, ping and sqlprobe from it,
// the load client prints one JSON line per request, and the app itself is
// an HTTP server on 127.0.0.1 that does the route contract's work. Tests
// replace any handler with l.Handle to script a failure.
type fakeLab struct {
	*enginefake.Engine
	t   testing.TB
	app *httptest.Server
	// all is the apps metadata with every app's port moved to the fake
	// app's, so the stack's private address reaches it.
	all map[string]*apps.Meta

	healthy atomic.Bool // /health answers 200

	mu sync.Mutex
	// One-way delay and peers per shaped side ("app", "db"), as the
	// agents were last told.
	delay      map[string]time.Duration
	active     map[string]bool
	peers      map[string][]string
	statements int64 // pg_stat_statements calls since the last reset
	extra      int64 // statements the app does beyond its contract, per request
	// dbRole is the app's database role the statement counts filter on;
	// noPGSS makes pg_stat_statements unloaded (a user's PostgreSQL).
	dbRole string
	noPGSS bool
	// noNetem makes the kernel lack netem, so "auto" resolves to the
	// userspace shaper (the wire hook by default); sweeps counts the
	// wire-rule sweeps run and their label prefixes.
	noNetem bool
	sweeps  []string
	sql     []string // every psql -c query, in order
	loads   []fakeLoad
	// items is what the fake app's /api/items saw: "METHOD path
	// Authorization body" per request; traced what the trace agent read.
	items  []string
	traced []workloads.Request
}

// fakeLoad is one `agent load` the client ran.
type fakeLoad struct {
	Client   string
	Route    string // the route, or mix:NAME
	RTT      time.Duration
	Requests int
	Warmup   int
	Headers  []string
	// MixJSON and Seed of a user's mix (--mix-json); its requests as drawn.
	MixJSON string
	Seed    uint64
	Calls   []workloads.Request
}

// The fake shaper: ICMP takes the base plus the configured RTT; a
// statement costs one RTT.
const (
	fakeBaseRTT    = 40 * time.Microsecond
	fakeBaseSelect = 100 * time.Microsecond
	fakeBaseReq    = 500 * time.Microsecond
	fakeAPIKey     = "fake-api-key"
	fakeMixStmts   = 10
	fakeItemStmts  = 2
)

func newFakeLab(t testing.TB) *fakeLab {
	t.Helper()
	l := &fakeLab{Engine: enginefake.New(), t: t,
		delay: map[string]time.Duration{}, active: map[string]bool{}, peers: map[string][]string{}, dbRole: "rttlab"}
	l.healthy.Store(true)
	l.app = httptest.NewServer(http.HandlerFunc(l.serveApp))
	t.Cleanup(l.app.Close)
	_, portStr, _ := net.SplitHostPort(l.app.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	l.HostPort = portStr
	l.IPByService["app"] = "127.0.0.1"

	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	l.all = map[string]*apps.Meta{}
	for n, m := range all {
		c := *m
		if c.Kind == "app" {
			c.Port = port
		}
		l.all[n] = &c
	}
	for _, n := range []string{"postgres", "agent", "go", "node", "rails", "redmine"} {
		l.AddImage(engine.ImageRef(n), map[string]string{engine.LabelApp: n})
	}
	l.AddImage("rttlab/postgres:latest", map[string]string{engine.LabelApp: "postgres"})

	l.Handle("pg_isready", func(ctx context.Context, x *enginefake.Call) (int, error) { return 0, nil })
	l.Handle("psql", l.psql)
	l.Handle("cat", func(ctx context.Context, x *enginefake.Call) (int, error) {
		if x.Cmd[1] == "/run/rttlab/redmine-api-key" {
			fmt.Fprintln(x.Stdout, fakeAPIKey)
			return 0, nil
		}
		fmt.Fprintf(x.Stderr, "cat: %s: No such file or directory\n", x.Cmd[1])
		return 1, nil
	})
	l.Handle("rttlab agent ctl", l.ctl)
	l.Handle("rttlab agent netem-probe", l.netemProbe)
	l.Handle("rttlab agent sweep", l.sweep)
	l.Handle("rttlab agent ping", l.ping)
	l.Handle("rttlab agent sqlprobe", l.sqlprobe)
	l.Handle("rttlab agent load", l.load)
	l.Handle("rttlab agent trace", l.trace)
	l.HandleStream("rttlab agent capture", l.capture)
	return l
}

// target resolves an app of the lab's metadata.
func (l *fakeLab) target(name string) apps.Target {
	l.t.Helper()
	tg, err := apps.Resolve(l.all, name)
	if err != nil {
		l.t.Fatal(err)
	}
	return tg
}

// rtt is the round trip the two agents' settings add up to.
func (l *fakeLab) rtt() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rttLocked()
}

func (l *fakeLab) rttLocked() time.Duration {
	var d time.Duration
	for side, on := range l.active {
		if on {
			d += l.delay[side]
		}
	}
	return d
}

// Loads returns every load the client ran, in order.
func (l *fakeLab) Loads() []fakeLoad {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]fakeLoad(nil), l.loads...)
}

// stmtsFor is the database work of one request to path.
func (l *fakeLab) stmtsFor(path string) int64 {
	p, q, _ := strings.Cut(path, "?")
	switch p {
	case "/feed":
		return 3
	case "/feed-naive":
		return 12
	case "/serial":
		n, _ := strconv.Atoi(strings.TrimPrefix(q, "n="))
		return int64(n)
	case "/api/items":
		return fakeItemStmts
	}
	return fakeMixStmts
}

func (l *fakeLab) serveApp(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(code int, v any) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	count := func(n int64) {
		l.mu.Lock()
		l.statements += n + l.extra
		l.mu.Unlock()
	}
	switch p := r.URL.Path; {
	case p == "/health":
		if !l.healthy.Load() {
			reply(http.StatusServiceUnavailable, map[string]string{"error": "starting"})
			return
		}
		reply(http.StatusOK, map[string]string{"status": "ok"})
	case p == "/feed" || p == "/feed-naive":
		var arts []map[string]any
		for i := 1; i <= FeedArticles; i++ {
			arts = append(arts, map[string]any{"id": i, "title": fmt.Sprintf("article %d", i), "feedback": 2})
		}
		count(l.stmtsFor(p))
		reply(http.StatusOK, map[string]any{"account": map[string]any{"name": "reader"}, "articles": arts})
	case p == "/serial":
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 1 || n > 1000 {
			reply(http.StatusBadRequest, map[string]string{"error": "n must be 1..1000"})
			return
		}
		count(int64(n))
		reply(http.StatusOK, map[string]int{"n": n})
	case p == "/api/items":
		l.serveItems(w, r, count)
	case strings.HasPrefix(p, "/issues") || p == "/projects.json":
		if r.Header.Get("X-Redmine-API-Key") != fakeAPIKey {
			reply(http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
			return
		}
		count(fakeMixStmts)
		reply(http.StatusOK, map[string]any{"total_count": 1})
	default:
		reply(http.StatusNotFound, map[string]string{"error": "not found"})
	}
}

// serveItems is a user's API: GET lists, POST creates from a JSON body
// with a bearer token (201), other methods are refused.
func (l *fakeLab) serveItems(w http.ResponseWriter, r *http.Request, count func(int64)) {
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	l.items = append(l.items, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(body))
	l.mu.Unlock()
	switch {
	case r.Method == http.MethodGet:
		count(fakeItemStmts)
		w.WriteHeader(http.StatusOK)
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case r.Header.Get("Authorization") != "Bearer t0ken" || r.Header.Get("Content-Type") != "application/json" || !json.Valid(body):
		w.WriteHeader(http.StatusBadRequest)
	default:
		count(fakeItemStmts)
		w.WriteHeader(http.StatusCreated)
	}
}

func (l *fakeLab) psql(ctx context.Context, x *enginefake.Call) (int, error) {
	q := x.Flag("-c")
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, q)
	switch {
	case l.noPGSS && strings.Contains(q, "pg_stat_statements") && !strings.HasPrefix(q, "CREATE EXTENSION"):
		fmt.Fprintln(x.Stderr, `ERROR:  pg_stat_statements must be loaded via "shared_preload_libraries"`)
		return 1, nil
	case strings.HasPrefix(q, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"), q == "SELECT count(*) FROM pg_stat_statements":
		fmt.Fprintln(x.Stdout, 0)
	case strings.Contains(q, "pg_stat_statements_reset"):
		l.statements = 0
		fmt.Fprintln(x.Stdout)
	case q == appStatementsSQL(l.dbRole):
		fmt.Fprintln(x.Stdout, l.statements)
	case q == appStatementsDetailSQL(l.dbRole):
		fmt.Fprintf(x.Stdout, "%d x SELECT id, title FROM articles WHERE account_id = $1\n", l.statements)
	default:
		fmt.Fprintf(x.Stderr, "ERROR:  unexpected query %q\n", q)
		return 1, nil
	}
	return 0, nil
}

func (l *fakeLab) ctl(ctx context.Context, x *enginefake.Call) (int, error) {
	side := x.Service()
	op := x.Cmd[3]
	l.mu.Lock()
	defer l.mu.Unlock()
	switch op {
	case "set":
		d, err := netem.ParseDelay(x.Flag("--delay"))
		if err != nil {
			fmt.Fprintf(x.Stderr, "rttlab: %v\n", err)
			return 2, nil
		}
		l.delay[side], l.active[side], l.peers[side] = d, true, x.Flags("--peer")
	case "clear":
		l.delay[side], l.active[side], l.peers[side] = 0, false, nil
	case "show", "ping":
	default:
		fmt.Fprintf(x.Stderr, "rttlab: ctl %q: use set, clear, show or ping\n", op)
		return 2, nil
	}
	rep := netem.Reply{OK: true, Backend: "kernel", Why: "sch_netem works in this namespace", Link: "eth0",
		Active: l.active[side], DelayNs: l.delay[side].Nanoseconds(), Peers: l.peers[side]}
	if rep.Active {
		rep.Scope = "interface"
		if len(rep.Peers) > 0 {
			rep.Scope = "path"
		}
	}
	b, _ := json.Marshal(rep)
	fmt.Fprintln(x.Stdout, string(b))
	return 0, nil
}

func (l *fakeLab) netemProbe(ctx context.Context, x *enginefake.Call) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.noNetem {
		fmt.Fprintln(x.Stdout, `{"kernel":false,"why":"tc qdisc add dev lo root netem: no such file or directory: Specified qdisc kind is unknown."}`)
		return 0, nil
	}
	fmt.Fprintln(x.Stdout, `{"kernel":true,"why":"sch_netem works"}`)
	return 0, nil
}

func (l *fakeLab) sweep(ctx context.Context, x *enginefake.Call) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweeps = append(l.sweeps, x.Flag("--label-prefix"))
	fmt.Fprintln(x.Stdout, `{"removed":[]}`)
	return 0, nil
}

// Sweeps returns the label prefixes of the wire-rule sweeps run so far.
func (l *fakeLab) Sweeps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sweeps...)
}

func (l *fakeLab) ping(ctx context.Context, x *enginefake.Call) (int, error) {
	n, _ := strconv.Atoi(x.Flag("--count"))
	d := fakeBaseRTT + l.rtt()
	res := workloads.PingResult{Dst: x.Flag("--to"), Sent: n, Received: n, Median: d, Mean: d, Min: d, Max: d}
	for i := 0; i < n; i++ {
		res.Samples = append(res.Samples, d)
	}
	return 0, json.NewEncoder(x.Stdout).Encode(res)
}

func (l *fakeLab) sqlprobe(ctx context.Context, x *enginefake.Call) (int, error) {
	runs, _ := strconv.Atoi(x.Flag("--runs"))
	calls, _ := strconv.Atoi(x.Flag("--calls"))
	d := fakeBaseSelect + l.rtt()
	var out []workloads.ProbeRun
	for i := 1; i <= runs; i++ {
		m := d + time.Duration(i)*time.Microsecond
		out = append(out, workloads.ProbeRun{Run: i, N: calls, Median: m, Mean: m, Min: m, Max: m})
	}
	return 0, json.NewEncoder(x.Stdout).Encode(out)
}

// load prints what `rttlab agent load` prints: one JSON line per request.
func (l *fakeLab) load(ctx context.Context, x *enginefake.Call) (int, error) {
	requests, _ := strconv.Atoi(x.Flag("--requests"))
	warmup, _ := strconv.Atoi(x.Flag("--warmup"))
	ld := fakeLoad{Client: x.Container.Spec.Name, Route: x.Flag("--route"), RTT: l.rtt(), Requests: requests, Warmup: warmup, Headers: x.Flags("--header")}
	paths := make([]string, warmup+requests)
	if js := x.Flag("--mix-json"); js != "" {
		ld.Route, ld.MixJSON = "mix:json", js
		ld.Seed, _ = strconv.ParseUint(x.Flag("--seed"), 10, 64)
		var reqs []workloads.MixRequest
		if err := json.Unmarshal([]byte(js), &reqs); err != nil {
			return 1, err
		}
		m, err := workloads.RequestMix("json", reqs)
		if err != nil {
			return 1, err
		}
		if ld.Calls, err = workloads.Sequence(m, ld.Seed, len(paths)); err != nil {
			return 1, err
		}
		copy(paths, workloads.Paths(ld.Calls))
	} else if mix := x.Flag("--mix"); mix != "" {
		ld.Route = "mix:" + mix
		seed, _ := strconv.ParseUint(x.Flag("--seed"), 10, 64)
		seq, err := workloads.Sequence(workloads.RedmineMix(), seed, len(paths))
		if err != nil {
			return 1, err
		}
		copy(paths, workloads.Paths(seq))
	} else {
		for i := range paths {
			paths[i] = ld.Route
		}
	}
	l.mu.Lock()
	l.loads = append(l.loads, ld)
	l.mu.Unlock()
	w := workloads.NewResultWriter(x.Stdout)
	for i, p := range paths {
		lat := fakeBaseReq + time.Duration(l.stmtsFor(p))*ld.RTT + time.Duration(i%5)*10*time.Microsecond
		if err := w.Write(workloads.Result{Seq: i, Warmup: i < warmup, Path: p, LatencyNS: lat.Nanoseconds(), Status: 200, Bytes: 1234}); err != nil {
			return 1, err
		}
	}
	fmt.Fprintf(x.Stderr, `{"requests":%d,"failures":0}`+"\n", len(paths))
	return 0, nil
}

// trace answers `rttlab agent trace`: per request on stdin, one round
// trip and one statement per statement of the route, no Parse.
func (l *fakeLab) trace(ctx context.Context, x *enginefake.Call) (int, error) {
	dec := json.NewDecoder(strings.NewReader(string(x.Stdin)))
	enc := json.NewEncoder(x.Stdout)
	for dec.More() {
		var r workloads.Request
		if err := dec.Decode(&r); err != nil {
			fmt.Fprintf(x.Stderr, "rttlab: trace: %v\n", err)
			return 1, nil
		}
		n := l.stmtsFor(r.Path)
		l.mu.Lock()
		l.statements += n + l.extra
		l.traced = append(l.traced, r)
		l.mu.Unlock()
		res := workloads.TraceResult{Type: r.Type, Path: r.Path, Status: 200, LatencyNS: 1e6,
			WireCounts: workloads.WireCounts{RoundTrips: int(n), Statements: int(n), ClientPackets: int(n), ServerPackets: int(n)}}
		if err := enc.Encode(res); err != nil {
			return 1, err
		}
	}
	return 0, nil
}
