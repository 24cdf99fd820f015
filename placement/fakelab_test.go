package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// placeLab is an enginefake.Engine scripted as the placement study's four
// nodes on a model network: every agent holds the one-way delays it was
// last told per peer, and what the client measures follows from them:
//
//	ping x→y        rtt(x, y)
//	SELECT 1 from h fakeSelect + rtt(h, db)
//	connect to h    fakeConnect + rtt(client, h)
//	a request to h  fakeApp + rtt(client, h) + N × (fakeStmt + rtt(h, db))
//	                (+ rtt(client, h) again with a new connection)
//
// with rtt(x, y) = 2 × fakeHop + the delays x→y and y→x, and N the
// route's serial statements (the per-N route's n). The compute hosts a
// and b are real HTTP servers on 127.0.0.1 and 127.0.0.2, so stack
// readiness and the routing proxy (run in-process from the proxy
// container's config) use real HTTP; only latencies come from the model.
type placeLab struct {
	*fakelab.Twin
	t    testing.TB
	meta *apps.Meta // the app, its port moved to the fake hosts'
	port int

	mu    sync.Mutex
	delay map[string]map[string]time.Duration // node -> peer IP -> one-way delay
	ips   map[string]string                   // node -> IP, as the stack reports them
	proxy *Proxy                              // the routing proxy, while its container runs
	log   *bytes.Buffer                       // the proxy's decision log
}

const (
	fakeHop     = 20 * time.Microsecond
	fakeSelect  = 60 * time.Microsecond
	fakeConnect = 30 * time.Microsecond
	fakeApp     = 400 * time.Microsecond
	fakeStmt    = 50 * time.Microsecond
	fakeProxy   = 80 * time.Microsecond
)

// newPlaceLab starts the two compute hosts' HTTP servers and scripts the
// engine for app (its metadata from the embedded apps).
func newPlaceLab(t *testing.T, app string, d fakelab.Double) *placeLab {
	t.Helper()
	l := &placeLab{Twin: fakelab.NewTwin(d), t: t, delay: map[string]map[string]time.Duration{}, ips: map[string]string{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	a := httptest.NewServer(h)
	t.Cleanup(a.Close)
	_, portStr, _ := net.SplitHostPort(a.Listener.Addr().String())
	l.port, _ = strconv.Atoi(portStr)
	lnB, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", portStr))
	if err != nil {
		t.Skipf("a second loopback address on port %s: %v", portStr, err)
	}
	b := &httptest.Server{Listener: lnB, Config: &http.Server{Handler: h}}
	b.Start()
	t.Cleanup(b.Close)
	l.IPByService[NodeA], l.IPByService[NodeB] = "127.0.0.1", "127.0.0.2"

	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	m := *all[app]
	m.Port = l.port
	l.meta = &m
	for _, n := range []string{app, "postgres"} {
		l.AddImage(engine.ImageRef(n), map[string]string{engine.LabelApp: n})
	}
	l.AddImage(stack.AgentImage, map[string]string{engine.LabelApp: "agent"})

	l.Handle("pg_isready", func(ctx context.Context, x *enginefake.Call) (int, error) { return 0, nil })
	l.Handle("rttlab agent ctl", l.ctl)
	l.Handle("rttlab agent ping", l.ping)
	l.Handle("rttlab agent sqlprobe", l.sqlprobe)
	l.Handle("rttlab agent connect", l.connect)
	l.Handle("rttlab agent load", l.load)
	l.Handle("rttlab agent capacity", l.capacity)
	l.Handle("rttlab agent openloop", l.openloop)
	l.HandleStream("rttlab agent capture", l.capture)
	l.Handle("cat "+proxyLog, l.catLog)
	return l
}

// target is the lab's app as the placement plan validates it.
func (l *placeLab) target(t *testing.T, p *Plan) apps.Target {
	t.Helper()
	tg, err := p.ValidateApp(map[string]*apps.Meta{l.meta.Name: l.meta})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// ctl answers the agents: set records the per-peer delays, every op
// answers with what the agent holds.
func (l *placeLab) ctl(ctx context.Context, x *enginefake.Call) (int, error) {
	node := x.Service()
	l.mu.Lock()
	defer l.mu.Unlock()
	if x.Cmd[3] == "set" {
		d := map[string]time.Duration{}
		for _, pd := range x.Flags("--peer-delay") {
			ip, v, _ := strings.Cut(pd, "=")
			dur, err := time.ParseDuration(v)
			if err != nil {
				fmt.Fprintf(x.Stderr, "rttlab: --peer-delay %q: %v\n", pd, err)
				return 2, nil
			}
			d[ip] = dur
		}
		l.delay[node] = d
	}
	rep := netem.Reply{OK: true, Backend: netem.BackendUserspace, Why: "fake", Link: "eth0", Direction: netem.HookEgress, Active: l.delay[node] != nil}
	return 0, json.NewEncoder(x.Stdout).Encode(rep)
}

// nodeOf returns the node whose IP is ip; l.mu is held.
func (l *placeLab) nodeOf(ip string) string {
	for _, n := range PlaceNodes {
		if l.ips[n] == ip {
			return n
		}
	}
	l.t.Errorf("no node has IP %s (%v)", ip, l.ips)
	return ""
}

// rtt is the model's round trip between two nodes.
func (l *placeLab) rtt(x, y string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 2*fakeHop + l.delay[x][l.ips[y]] + l.delay[y][l.ips[x]]
}

func (l *placeLab) ping(ctx context.Context, x *enginefake.Call) (int, error) {
	l.mu.Lock()
	to := l.nodeOf(x.Flag("--to"))
	l.mu.Unlock()
	return fakelab.PingReply(x, l.rtt(x.Service(), to))
}

func (l *placeLab) sqlprobe(ctx context.Context, x *enginefake.Call) (int, error) {
	calls, _ := strconv.Atoi(x.Flag("--calls"))
	d := fakeSelect + l.rtt(x.Service(), NodeDB)
	run := workloads.ProbeRun{Run: 1, N: calls, Median: d, Mean: d, Min: d, Max: d}
	for i := 0; i < calls; i++ {
		run.Samples = append(run.Samples, d+time.Duration(i%3)*time.Microsecond)
	}
	return 0, json.NewEncoder(x.Stdout).Encode([]workloads.ProbeRun{run})
}

func (l *placeLab) connect(ctx context.Context, x *enginefake.Call) (int, error) {
	warmup, _ := strconv.Atoi(x.Flag("--warmup"))
	count, _ := strconv.Atoi(x.Flag("--count"))
	host, port, _ := net.SplitHostPort(x.Flag("--to"))
	d := fakeConnect
	if port != strconv.Itoa(proxyPort) {
		l.mu.Lock()
		node := l.nodeOf(host)
		l.mu.Unlock()
		d += l.rtt(NodeClient, node)
	}
	var samples []int64
	for i := 0; i < count; i++ {
		samples = append(samples, (d + time.Duration(i%4)*time.Microsecond).Nanoseconds())
	}
	return 0, json.NewEncoder(x.Stdout).Encode(map[string]any{"to": x.Flag("--to"), "warmup": warmup, "failures": 0, "samples_ns": samples})
}

// statements is the serial statement count of a request path.
func (l *placeLab) statements(path string) int {
	p, q, _ := strings.Cut(path, "?")
	if v, err := url.ParseQuery(q); err == nil && v.Has(NParam) {
		n, _ := strconv.Atoi(v.Get(NParam))
		return n
	}
	rm, ok := routeMeta(l.meta, p)
	if !ok && p != l.meta.Health {
		l.t.Errorf("request to %s: not a route of %s", path, l.meta.Name)
	}
	return rm.Statements
}

// latency is the model's latency of a request to host.
func (l *placeLab) latency(host, path string, newConn bool, i int) time.Duration {
	c := l.rtt(NodeClient, host)
	d := fakeApp + c + time.Duration(l.statements(path))*(fakeStmt+l.rtt(host, NodeDB))
	if newConn {
		d += c
	}
	return d + time.Duration(i%5)*2*time.Microsecond
}

// viaProxy routes one request through the in-process proxy and returns
// the host it chose and the response's status.
func (l *placeLab) viaProxy(path string) (string, int) {
	l.mu.Lock()
	p := l.proxy
	l.mu.Unlock()
	if p == nil {
		l.t.Errorf("request %s through the proxy while none runs", path)
		return "", 502
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
	return rec.Header().Get(HeaderHost), rec.Code
}

// hostOf is the node a load's base URL names, or "" for the proxy.
func (l *placeLab) hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		l.t.Errorf("load --url %q: %v", base, err)
		return ""
	}
	if u.Port() == strconv.Itoa(proxyPort) {
		l.ensureProxy()
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodeOf(u.Hostname())
}

// ensureProxy builds the routing proxy from the running proxy
// container's --config-json, as `rttlab agent proxy` would.
func (l *placeLab) ensureProxy() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proxy != nil {
		return
	}
	specs := l.Started()
	for i := len(specs) - 1; i >= 0; i-- {
		s := specs[i]
		if s.Labels[engine.LabelRole] != "proxy" {
			continue
		}
		cfg, err := ParseConfig([]byte(s.Cmd[len(s.Cmd)-1]))
		if err != nil {
			l.t.Fatalf("proxy config: %v", err)
		}
		l.log = &bytes.Buffer{}
		if l.proxy, err = NewProxy(cfg, l.log); err != nil {
			l.t.Fatalf("proxy: %v", err)
		}
		return
	}
	l.t.Fatal("a request to the proxy before its container was created")
}

// load answers `agent load`: one result line per path, direct or through
// the proxy.
func (l *placeLab) load(ctx context.Context, x *enginefake.Call) (int, error) {
	warmup, _ := strconv.Atoi(x.Flag("--warmup"))
	host, newConn := l.hostOf(x.Flag("--url")), slices.Contains(x.Cmd, "--new-conn")
	w := workloads.NewResultWriter(x.Stdout)
	for i, p := range x.Flags("--path") {
		h, status, extra := host, 200, time.Duration(0)
		if h == "" {
			h, status = l.viaProxy(p)
			extra = fakeProxy
		}
		res := workloads.Result{Seq: i, Warmup: i < warmup, Path: p, Status: status, Bytes: 11}
		if status == 200 {
			res.LatencyNS = (l.latency(h, p, newConn, i) + extra).Nanoseconds()
		}
		if err := w.Write(res); err != nil {
			return 1, err
		}
	}
	fmt.Fprintf(x.Stderr, `{"requests":%d,"failures":0}`+"\n", len(x.Flags("--path")))
	return 0, nil
}

// capacity answers `agent capacity` with a rate that sustains.
func (l *placeLab) capacity(ctx context.Context, x *enginefake.Call) (int, error) {
	c := workloads.Capacity{Rate: 400, Ceiling: 450, Converged: true, Trials: []workloads.CapacityTrial{{Rate: 400, Sustained: true}, {Rate: 450, Reason: "p99 over the bound"}}}
	return 0, json.NewEncoder(x.Stdout).Encode(c)
}

// openloop answers `agent openloop` through the proxy: one result per
// path with the chosen host copied from the response, and the totals.
func (l *placeLab) openloop(ctx context.Context, x *enginefake.Call) (int, error) {
	warmup, _ := strconv.Atoi(x.Flag("--warmup"))
	if l.hostOf(x.Flag("--url")) != "" {
		l.t.Errorf("openloop to %s, not the proxy", x.Flag("--url"))
	}
	w := workloads.NewOpenResultWriter(x.Stdout)
	paths := x.Flags("--path")
	for i, p := range paths {
		h, status := l.viaProxy(p)
		lat := l.latency(h, p, true, i) + fakeProxy
		res := workloads.OpenResult{Result: workloads.Result{Seq: i, Warmup: i < warmup, Path: p, Status: status, Bytes: 11, LatencyNS: lat.Nanoseconds()},
			ScheduledNS: int64(i) * 2e6, SentNS: int64(i) * 2e6, ServiceNS: lat.Nanoseconds(), NewConn: true, Tags: map[string]string{HeaderHost: h}}
		if err := w.Write(res); err != nil {
			return 1, err
		}
	}
	tot := workloads.OpenTotals{Seed: 1, Scheduled: len(paths), Sent: len(paths), Recorded: len(paths), Measured: len(paths) - warmup, Warmup: warmup}
	b, _ := json.Marshal(tot)
	fmt.Fprintln(x.Stderr, string(b))
	return 0, nil
}

// catLog answers `cat` of the proxy's decision log: the proxy is
// closed first, which flushes the log (the container is removed next).
func (l *placeLab) catLog(ctx context.Context, x *enginefake.Call) (int, error) {
	l.mu.Lock()
	p, buf := l.proxy, l.log
	l.proxy = nil
	l.mu.Unlock()
	if p == nil {
		fmt.Fprintf(x.Stderr, "cat: %s: No such file or directory\n", proxyLog)
		return 1, nil
	}
	if err := p.Close(); err != nil {
		return 1, err
	}
	_, err := x.Stdout.Write(buf.Bytes())
	return 0, err
}

// fakeTurns is how many turns of the database a capture sees; fakeDBTurn
// the database's time in each, fakeClockSkew how far the database's
// capture's clock is from the host's.
const (
	fakeTurns     = 20
	fakeDBTurn    = 10 * time.Microsecond
	fakeClockSkew = 5 * time.Second
)

// capture answers a capture in a compute host's agent or the database's:
// once its stdin closes, fakeTurns turns of the database between the
// host and the database, as this side saw them, each round trip the
// model's rtt at the delays the agents hold then; the database's
// capture reads its own clock, fakeClockSkew ahead.
func (l *placeLab) capture(ctx context.Context, x *enginefake.Call) (int, error) {
	local, errL := netip.ParseAddr(x.Flag("--local"))
	peer, errP := netip.ParseAddr(x.Flag("--peer"))
	if errL != nil || errP != nil {
		fmt.Fprintf(x.Stderr, "rttlab: bad capture command %q\n", x.Cmd)
		return 2, nil
	}
	fakelab.AwaitCapture(x, local, peer.String())
	l.mu.Lock()
	self, other := l.nodeOf(local.String()), l.nodeOf(peer.String())
	l.mu.Unlock()
	host, db, onDB := local, peer, self == NodeDB
	if onDB {
		host, db = peer, local
		self, other = other, self
	}
	rtt := l.rtt(self, other).Nanoseconds()
	c := workloads.Capture{Iface: x.Flag("--iface"), Local: local, Peer: peer, StartNs: 0, EndNs: 1e12}
	hostP, dbP := netip.AddrPortFrom(host, 40000), netip.AddrPortFrom(db, 5432)
	for i := range fakeTurns {
		at := int64(i+1) * 1e6
		query := fakelab.TCPKey(hostP, dbP, uint32(i), uint16(i))
		answer := fakelab.TCPKey(dbP, hostP, uint32(i), uint16(i))
		if onDB {
			in := fakeClockSkew.Nanoseconds() + at + rtt/2
			c.Packets = append(c.Packets, workloads.CapturedPacket{T: in, Key: query, Len: 20},
				workloads.CapturedPacket{T: in + fakeDBTurn.Nanoseconds(), Out: true, Key: answer, Len: 20})
		} else {
			c.Packets = append(c.Packets, workloads.CapturedPacket{T: at, Out: true, Key: query, Len: 20},
				workloads.CapturedPacket{T: at + rtt + fakeDBTurn.Nanoseconds(), Key: answer, Len: 20})
		}
	}
	return 0, json.NewEncoder(x.Stdout).Encode(c)
}
