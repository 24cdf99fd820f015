// Package fakelab scripts the in-memory engine as a healthy rttlab stack
// for the unit tests of the stack, shaping, RTT and worker study packages:
// PostgreSQL, the agents, the load client and an HTTP app on 127.0.0.1.
package fakelab

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
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

// Lab is a enginefake.Engine scripted as a healthy rttlab stack: PostgreSQL
// answers pg_isready and psql (with a pg_stat_statements counter), the
// agents hold a delay per side and answer ctl, ping and sqlprobe from it,
// the load client prints one JSON line per request, and the app itself is
// an HTTP server on 127.0.0.1 that does the route contract's work. Tests
// replace any handler with l.Handle to script a failure.
type Lab struct {
	*Twin
	t   testing.TB
	App *httptest.Server
	// Apps is the apps metadata with every app's port moved to the fake
	// app's, so the stack's private address reaches it.
	Apps map[string]*apps.Meta

	Healthy atomic.Bool // /health answers 200

	Mu sync.Mutex
	// One-way delay and peers per shaped side ("app", "db"), as the
	// agents were last told.
	Delay      map[string]time.Duration
	Active     map[string]bool
	peers      map[string][]string
	statements int64 // pg_stat_statements calls since the last reset
	Extra      int64 // statements the app does beyond its contract, per request
	// DBRole is the app's database role the statement counts filter on;
	// NoPGSS makes pg_stat_statements unloaded (a user's PostgreSQL).
	DBRole string
	NoPGSS bool
	// NoNetem makes the kernel lack netem, so "auto" resolves to the
	// userspace shaper (the wire hook by default); sweeps counts the
	// wire-rule sweeps run and their label prefixes.
	NoNetem bool
	sweeps  []string
	sql     []string // every psql -c query, in order
	loads   []LoadCall
	// Items is what the fake app's /api/items saw: "METHOD path
	// Authorization body" per request; Traced what the trace agent read.
	Items  []string
	Traced []workloads.Request
}

// LoadCall is one `agent load` the client ran.
type LoadCall struct {
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
	// Paths are the paths requested, warmup first.
	Paths []string
}

// The fake shaper: ICMP takes the base plus the configured RTT; a
// statement costs one RTT.
const (
	BaseRTT    = 40 * time.Microsecond
	BaseSelect = 100 * time.Microsecond
	BaseReq    = 500 * time.Microsecond
	APIKey     = "fake-api-key"
	MixStmts   = 10
	ItemStmts  = 2
)

// New starts a lab: its app server, the apps' metadata pointed at it,
// the images of a built tree, and the handlers of every agent command.
func New(t testing.TB) *Lab {
	t.Helper()
	return newLab(t, NewTwin(OnEngine))
}

func newLab(t testing.TB, tw *Twin) *Lab {
	t.Helper()
	l := &Lab{Twin: tw, t: t,
		Delay: map[string]time.Duration{}, Active: map[string]bool{}, peers: map[string][]string{}, DBRole: "rttlab"}
	l.Healthy.Store(true)
	l.App = httptest.NewServer(http.HandlerFunc(l.serveApp))
	t.Cleanup(l.App.Close)
	_, portStr, _ := net.SplitHostPort(l.App.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	l.HostPort = portStr
	l.IPByService["app"] = "127.0.0.1"
	if l.RT != nil {
		l.RT.PublishedAt = net.JoinHostPort("127.0.0.1", portStr)
	}

	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	l.Apps = map[string]*apps.Meta{}
	for n, m := range all {
		c := *m
		if c.Kind == "app" {
			c.Port = port
		}
		l.Apps[n] = &c
	}
	for _, n := range []string{"postgres", "agent", "go", "node", "rails", "redmine"} {
		l.AddImage(engine.ImageRef(n), map[string]string{engine.LabelApp: n})
	}
	l.AddImage("rttlab/postgres:latest", map[string]string{engine.LabelApp: "postgres"})

	l.Handle("pg_isready", func(ctx context.Context, x *enginefake.Call) (int, error) { return 0, nil })
	l.Handle("psql", l.psql)
	l.Handle("cat", func(ctx context.Context, x *enginefake.Call) (int, error) {
		if x.Cmd[1] == "/run/rttlab/redmine-api-key" {
			fmt.Fprintln(x.Stdout, APIKey)
			return 0, nil
		}
		fmt.Fprintf(x.Stderr, "cat: %s: No such file or directory\n", x.Cmd[1])
		return 1, nil
	})
	l.Handle("rttlab agent ctl", l.Ctl)
	l.Handle("rttlab agent netem-probe", l.netemProbe)
	l.Handle("rttlab agent sweep", l.sweep)
	l.Handle("rttlab agent ping", l.Ping)
	l.Handle("rttlab agent sqlprobe", l.SQLProbe)
	l.Handle("rttlab agent load", l.Load)
	l.Handle("rttlab agent trace", l.trace)
	l.HandleStream("rttlab agent capture", l.Capture)
	return l
}

// Target resolves an app of the lab's metadata.
func (l *Lab) Target(name string) apps.Target {
	l.t.Helper()
	tg, err := apps.Resolve(l.Apps, name)
	if err != nil {
		l.t.Fatal(err)
	}
	return tg
}

// RTT is the round trip the two agents' settings add up to.
func (l *Lab) RTT() time.Duration {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.rttLocked()
}

func (l *Lab) rttLocked() time.Duration {
	var d time.Duration
	for side, on := range l.Active {
		if on {
			d += l.Delay[side]
		}
	}
	return d
}

// Loads returns every load the client ran, in order.
func (l *Lab) Loads() []LoadCall {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return append([]LoadCall(nil), l.loads...)
}

// stmtsFor is the database work of one request to path.
func (l *Lab) stmtsFor(path string) int64 {
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
		return ItemStmts
	}
	return MixStmts
}

func (l *Lab) serveApp(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(code int, v any) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	count := func(n int64) {
		l.Mu.Lock()
		l.statements += n + l.Extra
		l.Mu.Unlock()
	}
	switch p := r.URL.Path; {
	case p == "/health":
		if !l.Healthy.Load() {
			reply(http.StatusServiceUnavailable, map[string]string{"error": "starting"})
			return
		}
		reply(http.StatusOK, map[string]string{"status": "ok"})
	case p == "/feed" || p == "/feed-naive":
		var arts []map[string]any
		for i := 1; i <= apps.FeedArticles; i++ {
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
		if r.Header.Get("X-Redmine-API-Key") != APIKey {
			reply(http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
			return
		}
		count(MixStmts)
		reply(http.StatusOK, map[string]any{"total_count": 1})
	default:
		reply(http.StatusNotFound, map[string]string{"error": "not found"})
	}
}

// serveItems is a user's API: GET lists, POST creates from a JSON body
// with a bearer token (201), other methods are refused.
func (l *Lab) serveItems(w http.ResponseWriter, r *http.Request, count func(int64)) {
	body, _ := io.ReadAll(r.Body)
	l.Mu.Lock()
	l.Items = append(l.Items, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(body))
	l.Mu.Unlock()
	switch {
	case r.Method == http.MethodGet:
		count(ItemStmts)
		w.WriteHeader(http.StatusOK)
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case r.Header.Get("Authorization") != "Bearer t0ken" || r.Header.Get("Content-Type") != "application/json" || !json.Valid(body):
		w.WriteHeader(http.StatusBadRequest)
	default:
		count(ItemStmts)
		w.WriteHeader(http.StatusCreated)
	}
}

func (l *Lab) psql(ctx context.Context, x *enginefake.Call) (int, error) {
	q := x.Flag("-c")
	l.Mu.Lock()
	defer l.Mu.Unlock()
	l.sql = append(l.sql, q)
	switch {
	case l.NoPGSS && strings.Contains(q, "pg_stat_statements") && !strings.HasPrefix(q, "CREATE EXTENSION"):
		fmt.Fprintln(x.Stderr, `ERROR:  pg_stat_statements must be loaded via "shared_preload_libraries"`)
		return 1, nil
	case strings.HasPrefix(q, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"), q == "SELECT count(*) FROM pg_stat_statements":
		fmt.Fprintln(x.Stdout, 0)
	case strings.Contains(q, "pg_stat_statements_reset"):
		l.statements = 0
		fmt.Fprintln(x.Stdout)
	case strings.HasPrefix(q, "SELECT coalesce(sum(s.calls),0) FROM pg_stat_statements") && l.appQuery(q):
		fmt.Fprintln(x.Stdout, l.statements)
	case strings.HasPrefix(q, "SELECT s.calls || ' x ' || ") && l.appQuery(q):
		fmt.Fprintf(x.Stdout, "%d x SELECT id, title FROM articles WHERE account_id = $1\n", l.statements)
	default:
		fmt.Fprintf(x.Stderr, "ERROR:  unexpected query %q\n", q)
		return 1, nil
	}
	return 0, nil
}

// appQuery tells whether a pg_stat_statements query counts the app's
// role alone, leaving out rttlab's own calls, as the stack's are.
func (l *Lab) appQuery(q string) bool {
	return strings.Contains(q, "JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = '"+l.DBRole+"' AND") &&
		strings.Contains(q, "s.query NOT LIKE '%pg_stat_statements%'")
}

// Ctl answers `rttlab agent ctl` as a side's shaping agent: it holds the
// delay and peers it is told and reports them back.
func (l *Lab) Ctl(ctx context.Context, x *enginefake.Call) (int, error) {
	side := x.Service()
	op := x.Cmd[3]
	l.Mu.Lock()
	defer l.Mu.Unlock()
	// The agent's own refusals of flags that do not go together.
	f := netem.CtlFlags{Delay: x.Flag("--delay") != "", Floor: x.Flag("--floor") != "", Peers: len(x.Flags("--peer")), PeerDelays: len(x.Flags("--peer-delay"))}
	if err := netem.CheckCtlFlags(op, f); err != nil {
		fmt.Fprintf(x.Stderr, "rttlab: %v\n", err)
		return 2, nil
	}
	switch op {
	case "set":
		d, err := netem.ParseDelay(x.Flag("--delay"))
		if err != nil {
			fmt.Fprintf(x.Stderr, "rttlab: %v\n", err)
			return 2, nil
		}
		l.Delay[side], l.Active[side], l.peers[side] = d, true, x.Flags("--peer")
	case "clear":
		l.Delay[side], l.Active[side], l.peers[side] = 0, false, nil
	}
	rep := netem.Reply{OK: true, Backend: "kernel", Why: "sch_netem works in this namespace", Link: "eth0",
		Active: l.Active[side], DelayNs: l.Delay[side].Nanoseconds(), Peers: l.peers[side]}
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

func (l *Lab) netemProbe(ctx context.Context, x *enginefake.Call) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	if l.NoNetem {
		fmt.Fprintln(x.Stdout, `{"kernel":false,"why":"tc qdisc add dev lo root netem: no such file or directory: Specified qdisc kind is unknown."}`)
		return 0, nil
	}
	fmt.Fprintln(x.Stdout, `{"kernel":true,"why":"sch_netem works"}`)
	return 0, nil
}

func (l *Lab) sweep(ctx context.Context, x *enginefake.Call) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	l.sweeps = append(l.sweeps, x.Flag("--label-prefix"))
	fmt.Fprintln(x.Stdout, `{"removed":[]}`)
	return 0, nil
}

// Sweeps returns the label prefixes of the wire-rule sweeps run so far.
func (l *Lab) Sweeps() []string {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return append([]string(nil), l.sweeps...)
}

// Ping answers `rttlab agent ping` from the base RTT plus both sides'
// delays.
func (l *Lab) Ping(ctx context.Context, x *enginefake.Call) (int, error) {
	return PingReply(x, BaseRTT+l.RTT())
}

// PingReply answers the `rttlab agent ping` of x as if every one of its
// --count echoes took d, for the fake labs that model a network.
func PingReply(x *enginefake.Call, d time.Duration) (int, error) {
	n, _ := strconv.Atoi(x.Flag("--count"))
	res := workloads.PingResult{Dst: x.Flag("--to"), Sent: n, Received: n, Median: d, Mean: d, Min: d, Max: d}
	for i := 0; i < n; i++ {
		res.Samples = append(res.Samples, d)
	}
	return 0, json.NewEncoder(x.Stdout).Encode(res)
}

// SQLProbe answers `rttlab agent sqlprobe` with SELECT 1 runs that take
// the base RTT plus both sides' delays.
func (l *Lab) SQLProbe(ctx context.Context, x *enginefake.Call) (int, error) {
	runs, _ := strconv.Atoi(x.Flag("--runs"))
	calls, _ := strconv.Atoi(x.Flag("--calls"))
	d := BaseSelect + l.RTT()
	var out []workloads.ProbeRun
	for i := 1; i <= runs; i++ {
		m := d + time.Duration(i)*time.Microsecond
		out = append(out, workloads.ProbeRun{Run: i, N: calls, Median: m, Mean: m, Min: m, Max: m})
	}
	return 0, json.NewEncoder(x.Stdout).Encode(out)
}

// Load prints what `rttlab agent load` prints: one JSON line per request.
func (l *Lab) Load(ctx context.Context, x *enginefake.Call) (int, error) {
	requests, _ := strconv.Atoi(x.Flag("--requests"))
	warmup, _ := strconv.Atoi(x.Flag("--warmup"))
	ld := LoadCall{Client: x.Container.Spec.Name, Route: x.Flag("--route"), RTT: l.RTT(), Requests: requests, Warmup: warmup, Headers: x.Flags("--header")}
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
	ld.Paths = paths
	l.Mu.Lock()
	l.loads = append(l.loads, ld)
	l.Mu.Unlock()
	w := workloads.NewResultWriter(x.Stdout)
	for i, p := range paths {
		lat := BaseReq + time.Duration(l.stmtsFor(p))*ld.RTT + time.Duration(i%5)*10*time.Microsecond
		if err := w.Write(workloads.Result{Seq: i, Warmup: i < warmup, Path: p, LatencyNS: lat.Nanoseconds(), Status: 200, Bytes: 1234}); err != nil {
			return 1, err
		}
	}
	fmt.Fprintf(x.Stderr, `{"requests":%d,"failures":0}`+"\n", len(paths))
	return 0, nil
}

// trace answers `rttlab agent trace`: per request on stdin, one round
// trip and one statement per statement of the route, no Parse.
func (l *Lab) trace(ctx context.Context, x *enginefake.Call) (int, error) {
	dec := json.NewDecoder(strings.NewReader(string(x.Stdin)))
	enc := json.NewEncoder(x.Stdout)
	for dec.More() {
		var r workloads.Request
		if err := dec.Decode(&r); err != nil {
			fmt.Fprintf(x.Stderr, "rttlab: trace: %v\n", err)
			return 1, nil
		}
		n := l.stmtsFor(r.Path)
		l.Mu.Lock()
		l.statements += n + l.Extra
		l.Traced = append(l.Traced, r)
		l.Mu.Unlock()
		res := workloads.TraceResult{Type: r.Type, Path: r.Path, Status: 200, LatencyNS: 1e6,
			WireCounts: workloads.WireCounts{RoundTrips: int(n), Statements: int(n), ClientPackets: int(n), ServerPackets: int(n)}}
		if err := enc.Encode(res); err != nil {
			return 1, err
		}
	}
	return 0, nil
}

// The fake wire: CapturePackets echoes each way per capture; a packet
// takes BaseOneWay plus the delay of the side that holds its
// direction (the app's agent app->db, the database's db->app).
const (
	CapturePackets = 8
	BaseOneWay     = 20 * time.Microsecond
	Epoch          = int64(1_700_000_000_000_000_000)
)

// Capture answers `rttlab agent capture`: it says it captures, waits for
// its stdin to close, then prints what its side saw of the fake wire at
// the agents' current settings: the echoes of the one-way check and,
// when a load ran meanwhile (a task's captures), that load's requests
// (see taskPackets).
func (l *Lab) Capture(ctx context.Context, x *enginefake.Call) (int, error) {
	local, errL := netip.ParseAddr(x.Flag("--local"))
	var peers []netip.Addr
	var errP error
	for _, p := range strings.Split(x.Flag("--peer"), ",") {
		a, err := netip.ParseAddr(p)
		errP = errors.Join(errP, err)
		peers = append(peers, a)
	}
	if errL != nil || errP != nil || x.Flag("--iface") == "" || x.Flag("--for") == "" || !slices.Contains(x.Cmd, "--stop-on-eof") {
		fmt.Fprintf(x.Stderr, "rttlab: bad capture command %q\n", x.Cmd)
		return 2, nil
	}
	l.Mu.Lock()
	loadsBefore := len(l.loads)
	l.Mu.Unlock()
	AwaitCapture(x, local, x.Flag("--peer"))
	l.Mu.Lock()
	oneWay := map[string]int64{}
	for _, side := range []string{"app", "db"} {
		oneWay[side] = BaseOneWay.Nanoseconds()
		if l.Active[side] {
			oneWay[side] += l.Delay[side].Nanoseconds()
		}
	}
	var load *LoadCall
	if len(l.loads) > loadsBefore {
		load = &l.loads[len(l.loads)-1]
	}
	l.Mu.Unlock()
	side := x.Service()
	c := workloads.Capture{Iface: x.Flag("--iface"), Local: local, Peer: peers[0], Also: peers[1:], StartNs: Epoch, EndNs: Epoch + 1e12}
	if side == "app" || side == "db" {
		app, db := local, peers[0]
		if side == "db" {
			app, db = peers[0], local
		}
		c.Packets = echoPackets(side, app, db, oneWay)
	}
	if load != nil {
		c.Packets = append(c.Packets, l.taskPackets(side, local, peers, load, oneWay)...)
	}
	return 0, json.NewEncoder(x.Stdout).Encode(c)
}

// AwaitCapture says on x's stderr that the capture is ready, as `rttlab
// agent capture` does, then waits for its stdin to close.
func AwaitCapture(x *enginefake.Call, local netip.Addr, peer string) {
	fmt.Fprintf(x.Stderr, "%s %s: %s <-> %s\n", workloads.CaptureReady, x.Flag("--iface"), local, peer)
	if x.StdinR != nil {
		_, _ = io.Copy(io.Discard, x.StdinR)
	}
}

// TCPKey is the key of a fake TCP segment from src to dst (a 20-byte
// header, PSH|ACK) at sequence number seq with IP ID id.
func TCPKey(src, dst netip.AddrPort, seq uint32, id uint16) workloads.PacketKey {
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], src.Port())
	binary.BigEndian.PutUint16(tcp[2:], dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12], tcp[13] = 5<<4, 0x18
	return workloads.NewPacketKey(src.Addr(), dst.Addr(), 6, id, 0x4000, tcp)
}

// echoPackets are the one-way check's echoes as one side saw them.
func echoPackets(side string, app, db netip.Addr, oneWay map[string]int64) []workloads.CapturedPacket {
	var out []workloads.CapturedPacket
	for i := range CapturePackets {
		at := Epoch + int64(i+1)*1e6
		toDB := workloads.NewPacketKey(app, db, 1, uint16(i), 0x4000, []byte{8, 0, 0, 0, 0, 7, 0, byte(i)})
		toApp := workloads.NewPacketKey(db, app, 1, uint16(i), 0x4000, []byte{0, 0, 0, 0, 0, 7, 0, byte(i)})
		if side == "app" {
			out = append(out, workloads.CapturedPacket{T: at, Out: true, Key: toDB},
				workloads.CapturedPacket{T: at + 500e3 + oneWay["db"], Key: toApp})
		} else {
			out = append(out, workloads.CapturedPacket{T: at + oneWay["app"], Key: toDB},
				workloads.CapturedPacket{T: at + 500e3, Out: true, Key: toApp})
		}
	}
	return out
}

// The fake requests on the wire: a request every TaskRequestGap from
// Epoch+1 s, 10 µs each way between the client and the app, 2 µs of the
// app's time around each query, 1 µs of wire plus the side's delay each
// way, 3 µs at the database.
const (
	TaskRequestGap = 100 * time.Millisecond
	fakeClientPort = 40000
	fakeAppDBPort  = 50000
)

// taskPackets is what one capture of a task (in the app's namespace, the
// database's or the client's) saw of the load's requests: one segment per
// request, query, answer and response, each seen leaving its sender and
// arriving at its receiver, so that the anatomy can take them apart.
func (l *Lab) taskPackets(side string, local netip.Addr, peers []netip.Addr, ld *LoadCall, oneWay map[string]int64) []workloads.CapturedPacket {
	var app, db, client netip.Addr
	switch side {
	case "app":
		app, db = local, peers[0]
		if len(peers) > 1 {
			client = peers[1]
		}
	case "db":
		db, app = local, peers[0]
	default:
		client, app = local, peers[0]
	}
	appPort := uint16(l.Apps["go"].Port)
	var out []workloads.CapturedPacket
	var id uint16
	seq := map[string]uint32{}
	seg := func(src, dst netip.AddrPort, n, mark int, sent, recv int64) {
		id++
		k := src.String() + ">" + dst.String()
		if src.Addr() != local && dst.Addr() != local {
			seq[k] += uint32(n)
			return // not this side's packet
		}
		key := TCPKey(src, dst, seq[k], id)
		seq[k] += uint32(n)
		if src.Addr() == local {
			out = append(out, workloads.CapturedPacket{T: sent, Out: true, Key: key, Len: n, Mark: mark})
		}
		if dst.Addr() == local {
			out = append(out, workloads.CapturedPacket{T: recv, Key: key, Len: n, Mark: mark})
		}
	}
	cl, ap := netip.AddrPortFrom(client, fakeClientPort), netip.AddrPortFrom(app, appPort)
	adb, dbp := netip.AddrPortFrom(app, fakeAppDBPort), netip.AddrPortFrom(db, 5432)
	const us = int64(time.Microsecond)
	for i, p := range ld.Paths {
		t := Epoch + int64(time.Second) + int64(i)*TaskRequestGap.Nanoseconds()
		seg(cl, ap, 100, i+1, t, t+10*us) // the request carries its sequence number
		t += 10 * us
		for range l.stmtsFor(p) {
			t += 2 * us
			seg(adb, dbp, 50, 0, t, t+us+oneWay["app"]-BaseOneWay.Nanoseconds())
			t += us + oneWay["app"] - BaseOneWay.Nanoseconds() + 3*us
			seg(dbp, adb, 80, 0, t, t+us+oneWay["db"]-BaseOneWay.Nanoseconds())
			t += us + oneWay["db"] - BaseOneWay.Nanoseconds()
		}
		t += 2 * us
		seg(ap, cl, 300, 0, t, t+10*us)
	}
	return out
}

// WriteFile writes content to path, making its folder, and returns path.
func WriteFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
