package workers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/internal/proxyserve"
	"github.com/rttlab/rttlab/internal/proxyserve/proxytest"
	"github.com/rttlab/rttlab/internal/syncbuf"
)

// newTestWorker is a single-mode worker: proxytest's upstream, which
// refuses a request that still carries the policy header.
func newTestWorker(t testing.TB, name string) *proxytest.Upstream {
	return proxytest.NewUpstream(t, name, HeaderPolicy)
}

type proxyRig struct {
	t       testing.TB
	p       *Proxy
	srv     *httptest.Server
	workers []*proxytest.Upstream
	logBuf  *syncbuf.Buffer
	closed  bool
	wg      sync.WaitGroup
}

func newProxyRig(t testing.TB, n int, mod func(*ProxyConfig)) *proxyRig {
	t.Helper()
	rig := &proxyRig{t: t, logBuf: &syncbuf.Buffer{}}
	cfg := ProxyConfig{Threads: 2, Seed: 42, Ties: TiesFirst}
	for i := range n {
		w := newTestWorker(t, fmt.Sprintf("w%d", i))
		rig.workers = append(rig.workers, w)
		cfg.Upstreams = append(cfg.Upstreams, Upstream{Name: w.Name, URL: w.Srv.URL})
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewProxy(cfg, rig.logBuf)
	if err != nil {
		t.Fatal(err)
	}
	rig.p = p
	rig.srv = httptest.NewServer(p)
	t.Cleanup(func() { rig.close() })
	return rig
}

// close stops the proxy and returns its decisions.
func (rig *proxyRig) close() []Decision {
	if !rig.closed {
		rig.closed = true
		for _, w := range rig.workers {
			for range len(w.Held) + 8 {
				select {
				case w.Release <- struct{}{}:
				default:
				}
			}
		}
		rig.wg.Wait()
		rig.srv.Close()
		if err := rig.p.Close(); err != nil {
			rig.t.Error(err)
		}
	}
	ds, err := proxyserve.ReadLog[Decision](bytes.NewReader(rig.logBuf.Bytes()))
	if err != nil {
		rig.t.Fatal(err)
	}
	return ds
}

type reply struct {
	status int
	worker string
	body   string
}

func (rig *proxyRig) get(path string, hdr map[string]string) reply {
	req, _ := http.NewRequest("GET", rig.srv.URL+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rig.t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header.Get(HeaderWorker), string(b)}
}

// hold sends a request that the chosen worker holds, waits until it is
// held there, and returns the worker's name.
func (rig *proxyRig) hold(rule Rule) string {
	rig.t.Helper()
	before := rig.p.InFlight()
	rig.wg.Add(1)
	go func() {
		defer rig.wg.Done()
		rig.get("/work?cpu_ms=1", map[string]string{proxytest.HoldHeader: "1", HeaderPolicy: string(rule)})
	}()
	deadline := time.After(10 * time.Second)
	for {
		now := rig.p.InFlight()
		for i := range now {
			if now[i] > before[i] {
				select {
				case <-rig.workers[i].Held:
					return rig.workers[i].Name
				case <-deadline:
					rig.t.Fatal("request never reached its worker")
				}
			}
		}
		select {
		case <-deadline:
			rig.t.Fatal("request never counted in flight")
		case <-time.After(time.Millisecond):
		}
	}
}

// releaseOne lets one held request of worker i finish and waits until the
// proxy no longer counts it.
func (rig *proxyRig) releaseOne(i int) {
	rig.t.Helper()
	want := rig.p.InFlight()[i] - 1
	rig.workers[i].Release <- struct{}{}
	deadline := time.Now().Add(10 * time.Second)
	for rig.p.InFlight()[i] != want {
		if time.Now().After(deadline) {
			rig.t.Fatal("released request still in flight")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestProxyJSQChoosesIdleThenLeastBusy(t *testing.T) {
	rig := newProxyRig(t, 3, nil)
	var got []string
	got = append(got, rig.hold(RuleJSQ), rig.hold(RuleJSQ)) // w0, w1
	rig.releaseOne(0)                                       // [0 1 0]
	got = append(got, rig.hold(RuleJSQ))                    // w0: idle, listed before w2
	got = append(got, rig.hold(RuleJSQ))                    // w2: the last idle one
	got = append(got, rig.hold(RuleJSQ))                    // w0: all at 1, first
	rig.releaseOne(1)                                       // [2 0 1]
	got = append(got, rig.hold(RuleJSQ))                    // w1: idle
	rig.releaseOne(0)                                       // [1 1 1]
	rig.releaseOne(0)                                       // [0 1 1]
	got = append(got, rig.hold(RuleJSQ))                    // w0
	if want := "w0 w1 w0 w2 w0 w1 w0"; strings.Join(got, " ") != want {
		t.Errorf("jsq chose %s, want %s", strings.Join(got, " "), want)
	}
	ds := rig.close()
	if len(ds) != 7 {
		t.Fatalf("%d decisions", len(ds))
	}
	for _, d := range ds {
		if d.BusyWhileIdle() {
			t.Errorf("jsq sent a request to a busy worker while one was idle: %+v", d)
		}
		if d.Policy != "proxy:jsq" || d.Status != 200 || d.UpstreamStatus != 200 {
			t.Errorf("decision %+v", d)
		}
	}
}

func TestProxyRoundRobinIgnoresLoad(t *testing.T) {
	rig := newProxyRig(t, 3, func(c *ProxyConfig) { c.Rule = RuleRoundRobin })
	var got []string
	for range 3 {
		got = append(got, rig.hold(RuleRoundRobin))
	}
	rig.releaseOne(1)
	rig.releaseOne(2) // [1 0 0]: w0 is the only busy worker, and its turn
	got = append(got, rig.hold(RuleRoundRobin), rig.hold(RuleRoundRobin))
	if want := "w0 w1 w2 w0 w1"; strings.Join(got, " ") != want {
		t.Errorf("round-robin chose %s, want %s", strings.Join(got, " "), want)
	}
	ds := rig.close()
	sortBySeq(ds)
	if d := ds[3]; !d.BusyWhileIdle() || d.Worker != "w0" || d.Idle != 2 {
		t.Errorf("the 4th decision should go to busy w0 beside two idle workers: %+v", d)
	}
}

func TestProxyP2CMatchesJSQWithTwoWorkers(t *testing.T) {
	rig := newProxyRig(t, 2, nil)
	var got []string
	got = append(got, rig.hold(RuleP2C), rig.hold(RuleP2C)) // one each
	rig.releaseOne(1)
	got = append(got, rig.hold(RuleP2C)) // w1, the idle one
	got = append(got, rig.hold(RuleP2C)) // tie [1 1]: first drawn
	if got[0] == got[1] || got[2] != "w1" {
		t.Errorf("p2c with two workers chose %v", got)
	}
	for _, d := range rig.close() {
		if d.BusyWhileIdle() {
			t.Errorf("p2c with two workers chose a busy one beside an idle one: %+v", d)
		}
	}
}

// The log's snapshots replayed through a fresh chooser with the same seed
// give the same choices, for every rule: the log is a faithful record.
func TestProxyDecisionsReplay(t *testing.T) {
	for _, ties := range []Ties{TiesFirst, TiesRandom} {
		rig := newProxyRig(t, 3, func(c *ProxyConfig) { c.Ties = ties; c.Seed = 9 })
		rules := []Rule{RuleP2C, RuleJSQ, RuleRoundRobin, RuleP2C, RuleJSQ, RuleP2C, RuleRoundRobin, RuleJSQ}
		for i, r := range rules {
			rig.hold(r)
			if i == 3 {
				rig.releaseOne(slicesIndexMax(rig.p.InFlight()))
			}
		}
		ds := rig.close()
		sortBySeq(ds)
		c := NewChooser(9, ties)
		for _, d := range ds {
			r, _ := ParseRule(d.Policy)
			i, err := c.Choose(r, d.InFlight)
			if err != nil || i != d.Index {
				t.Errorf("ties %s: seq %d %s on %v chose %d, replay %d (%v)", ties, d.Seq, d.Policy, d.InFlight, d.Index, i, err)
			}
		}
	}
}

func slicesIndexMax(v []int) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}

func sortBySeq(ds []Decision) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].Seq < ds[j-1].Seq; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

func TestProxyHeadersLogAndKeepAlive(t *testing.T) {
	rig := newProxyRig(t, 2, func(c *ProxyConfig) { c.Threads = 1 })
	r := rig.get("/work?cpu_ms=5&queries=1&"+QueryPolicy+"=round-robin", map[string]string{HeaderRequestID: "r1"})
	if r.status != 200 || r.worker != "w0" || r.body != "w0 /work?cpu_ms=5&queries=1" {
		t.Errorf("reply %+v", r)
	}
	for range 5 {
		if r := rig.get("/work", map[string]string{HeaderPolicy: "proxy:jsq"}); r.status != 200 {
			t.Errorf("reply %+v", r)
		}
	}
	if r := rig.get("/work", map[string]string{HeaderPolicy: "fastest"}); r.status != 400 {
		t.Errorf("unknown rule answered %d", r.status)
	}
	rig.hold(RuleJSQ)
	rig.hold(RuleJSQ)
	rig.hold(RuleJSQ) // both busy: this one is saturated (threads 1)
	ds := rig.close()
	sortBySeq(ds)
	if d := ds[0]; d.RequestID != "r1" || d.Policy != "proxy:round-robin" || d.Path != "/work?cpu_ms=5&queries=1" || d.Idle != 2 || len(d.InFlight) != 2 {
		t.Errorf("first decision %+v", d)
	}
	if d := ds[6]; d.Status != 400 || d.Index != -1 || d.Error == "" {
		t.Errorf("refused decision %+v", d)
	}
	if d := ds[9]; !d.Saturated || d.Idle != 0 {
		t.Errorf("third held decision %+v", d)
	}
	// Sequential requests reuse one upstream connection per worker.
	for _, w := range rig.workers {
		if c := w.Conns.Load(); c > 3 {
			t.Errorf("%s: %d connections for sequential requests and two held ones", w.Name, c)
		}
	}
	reused := 0
	for _, d := range ds {
		if d.ConnReused {
			reused++
		}
	}
	if reused == 0 {
		t.Error("no upstream connection was reused")
	}
}

func TestProxyFailureIsNotRerouted(t *testing.T) {
	good := newTestWorker(t, "good")
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	var buf syncbuf.Buffer
	p, err := NewProxy(ProxyConfig{Upstreams: []Upstream{{"dead", deadURL}, {"good", good.Srv.URL}}, Rule: RuleRoundRobin, Ties: TiesFirst}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	resp, err := http.Get(srv.URL + "/work")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderWorker) != "dead" {
		t.Errorf("status %d worker %q", resp.StatusCode, resp.Header.Get(HeaderWorker))
	}
	if good.Hits.Load() != 0 {
		t.Error("the failed request was retried on another worker")
	}
	ds, _ := proxyserve.ReadLog[Decision](bytes.NewReader(buf.Bytes()))
	if len(ds) != 1 || ds[0].Status != 502 || ds[0].UpstreamStatus != 0 || ds[0].Error == "" || ds[0].Worker != "dead" {
		t.Errorf("decisions %+v", ds)
	}
	if got := p.InFlight(); got[0] != 0 {
		t.Errorf("in flight after failure %v", got)
	}
}

func TestProxyConfigValidation(t *testing.T) {
	cases := map[string]string{
		`{"upstreams": []}`: "no upstreams",
		`{"upstreams": [{"name": "a", "url": "http://a"}, {"name": "a", "url": "http://b"}]}`: "listed twice",
		`{"upstreams": [{"name": "a", "url": "ftp://a"}]}`:                                    "want http",
		`{"upstreams": [{"name": "a", "url": "http://a/x"}]}`:                                 "an origin only",
		`{"upstreams": [{"name": "a", "url": "http://a"}], "rule": "lifo"}`:                   "unknown proxy rule",
		`{"upstreams": [{"name": "a", "url": "http://a"}], "ties": "last"}`:                   "unknown ties",
		`{"upstreams": [{"name": "a", "url": "http://a"}], "threads": -1}`:                    "negative",
		`{"upstreams": [{"name": "a", "url": "http://a"}], "colour": 1}`:                      "unknown field",
		`{"upstreams": [{"url": "http://a"}]}`:                                                "no name",
	}
	for in, want := range cases {
		if _, err := ParseProxyConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	c, err := ParseProxyConfig([]byte(`{"upstreams": [{"name": "w0", "url": "http://puma-0:3000"}], "threads": 2, "rule": "p2c", "seed": 3}`))
	if err != nil || c.Rule != RuleP2C || c.Threads != 2 {
		t.Errorf("%+v %v", c, err)
	}
}

func TestServeRunsUntilCancelled(t *testing.T) {
	w := newTestWorker(t, "w0")
	logPath := filepath.Join(t.TempDir(), "log", "decisions.jsonl")
	addr, stop := proxytest.Serve(t, Server(ProxyConfig{Upstreams: []Upstream{{"w0", w.Srv.URL}}, LogPath: logPath}).Serve)
	resp, err := http.Get("http://" + addr + "/work")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := proxyserve.ReadLog[Decision](bytes.NewReader(b))
	if err != nil || len(ds) != 1 || ds[0].Worker != "w0" {
		t.Errorf("log %v %+v", err, ds)
	}
}

// A decision line keeps its fields' names and order: logs written before
// still read, and a diff of two logs stays a diff of values.
func TestDecisionLine(t *testing.T) {
	d := Decision{
		Head: proxyserve.Head{Time: time.Date(2026, 12, 4, 1, 2, 3, 0, time.UTC), Seq: 7, RequestID: "r-1", Method: "GET"},
		Path: "/work?cpu_ms=5", Policy: "proxy:jsq", Worker: "w1", Index: 1, InFlight: []int{1, 0}, Idle: 1, Saturated: true,
		Outcome:    proxyserve.Outcome{Status: 200, UpstreamStatus: 200, UpstreamMs: 1.5, TotalMs: 1.75, ConnReused: true, Error: "e"},
		AssignedEv: 3, ReleasedEv: 4,
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-12-04T01:02:03Z","seq":7,"request_id":"r-1","method":"GET","path":"/work?cpu_ms=5",` +
		`"policy":"proxy:jsq","worker":"w1","index":1,"in_flight":[1,0],"idle":1,"saturated":true,` +
		`"status":200,"upstream_status":200,"upstream_ms":1.5,"total_ms":1.75,"conn_reused":true,"error":"e",` +
		`"assigned_ev":3,"released_ev":4}`
	if string(b) != want {
		t.Errorf("line\n%s\nwant\n%s", b, want)
	}
}
