package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
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
)

// testUpstream is a compute host: proxytest's upstream, its server named
// srv as the benchmarks name it.
type testUpstream struct {
	*proxytest.Upstream
	srv *httptest.Server
}

func newTestUpstream(t testing.TB, name string) *testUpstream {
	u := proxytest.NewUpstream(t, name, "")
	return &testUpstream{Upstream: u, srv: u.Srv}
}

func testConfig(a, b string) Config {
	c := testCalibration()
	c.Hosts[0].ServiceTimeMs = 1.0
	c.Hosts[1].ServiceTimeMs = 0.5
	return Config{
		Upstreams:   []Upstream{{Name: "a", URL: a}, {Name: "b", URL: b}},
		Calibration: c,
	}
}

// startProxy serves cfg's proxy; the returned function closes it and
// returns the decision log.
func startProxy(t testing.TB, cfg Config) (*Proxy, *httptest.Server, func() []DecisionRecord) {
	t.Helper()
	var buf bytes.Buffer
	p, err := NewProxy(cfg, &buf)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	var once sync.Once
	var recs []DecisionRecord
	finish := func() []DecisionRecord {
		once.Do(func() {
			srv.Close()
			if err := p.Close(); err != nil {
				t.Error(err)
			}
			var err error
			if recs, err = proxyserve.ReadLog[DecisionRecord](&buf); err != nil {
				t.Fatal(err)
			}
		})
		return recs
	}
	t.Cleanup(func() { finish() })
	return p, srv, finish
}

func get(t testing.TB, url, policy string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if policy != "" {
		req.Header.Set(HeaderPolicy, policy)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func TestProxyRoutesByPolicy(t *testing.T) {
	a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
	cfg := testConfig(a.srv.URL, b.srv.URL)
	cfg.DefaultPolicy = PolicyProfiled
	_, srv, finish := startProxy(t, cfg)
	cases := []struct {
		policy, path, want, applied string
	}{
		{"", "/serial?n=3", "a", "profiled"}, // the default
		{"user-first", "/serial?n=12", "a", "user-first"},
		{"network-only", "/serial?n=3", "b", "network-only"},
		{"profiled", "/serial?n=3", "a", "profiled"},
		{"profiled", "/serial?n=12&x=1", "b", "profiled"},
		{"queue-aware", "/feed", "b", "queue-aware"},
	}
	for i, tc := range cases {
		resp, body := get(t, srv.URL+tc.path, tc.policy, HeaderRequestID, "req-"+tc.path)
		if resp.StatusCode != 200 || resp.Header.Get(HeaderHost) != tc.want || resp.Header.Get("X-Upstream") != tc.want {
			t.Errorf("%d %s %s: status %d host %q upstream %q", i, tc.policy, tc.path, resp.StatusCode, resp.Header.Get(HeaderHost), resp.Header.Get("X-Upstream"))
		}
		if resp.Header.Get(HeaderPolicy) != tc.applied || resp.Header.Get(HeaderConn) != ConnKeepAlive {
			t.Errorf("%d: policy header %q conn %q", i, resp.Header.Get(HeaderPolicy), resp.Header.Get(HeaderConn))
		}
		if body != tc.want+" "+tc.path { // path and query reach the upstream as sent
			t.Errorf("%d: body %q", i, body)
		}
	}
	recs := finish()
	if len(recs) != len(cases) {
		t.Fatalf("%d log lines for %d requests", len(recs), len(cases))
	}
	for i, r := range recs {
		tc := cases[i]
		if r.Seq != uint64(i+1) || r.Host != tc.want || string(r.Policy) != tc.applied || r.Status != 200 || r.UpstreamStatus != 200 ||
			r.Error != "" || !r.KeepAlive || r.RequestID != "req-"+tc.path || r.Method != "GET" || len(r.Scores) != 2 ||
			r.InFlight["a"] != 0 || r.InFlight["b"] != 0 || r.UpstreamMs <= 0 || r.TotalMs < r.UpstreamMs || r.Time.IsZero() {
			t.Errorf("line %d: %+v", i, r)
		}
	}
	if recs[1].Route != "/serial?n=12" || recs[1].N != 12 || recs[5].Route != "/feed" || recs[5].N != 3 {
		t.Errorf("routes %q %d, %q %d", recs[1].Route, recs[1].N, recs[5].Route, recs[5].N)
	}
	// The scores logged are the estimates: /serial?n=3 network-only.
	s := recs[2].Scores
	if s[0].Host != "a" || !near(s[0].NetworkOnlyMs, 2.2) || !near(s[1].NetworkOnlyMs, 2.1) || !near(s[1].ScoreMs, 2.1) || !near(s[0].ProfiledMs, 2.4) {
		t.Errorf("scores %+v", s)
	}
}

func TestProxyQueueAwareSeesInFlight(t *testing.T) {
	a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
	p, srv, finish := startProxy(t, testConfig(a.srv.URL, b.srv.URL))
	// Hold one request on a (user-first sends everything there).
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("GET", srv.URL+"/serial?n=0", nil)
		req.Header.Set(HeaderPolicy, "user-first")
		req.Header.Set(proxytest.HoldHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-a.Held
	if got := p.InFlight(); got["a"] != 1 || got["b"] != 0 {
		t.Fatalf("in flight %v", got)
	}
	// profiled /serial?n=0: a 1.2, b 1.9; with one in flight on a at
	// 1.0 ms, queue-aware scores a 2.2 and moves to b; profiled stays.
	resp, _ := get(t, srv.URL+"/serial?n=0", "queue-aware")
	if resp.Header.Get(HeaderHost) != "b" {
		t.Errorf("queue-aware chose %q with a busy", resp.Header.Get(HeaderHost))
	}
	resp, _ = get(t, srv.URL+"/serial?n=0", "profiled")
	if resp.Header.Get(HeaderHost) != "a" {
		t.Errorf("profiled chose %q", resp.Header.Get(HeaderHost))
	}
	a.Release <- struct{}{}
	<-done
	if got := p.InFlight(); got["a"] != 0 || got["b"] != 0 {
		t.Errorf("in flight after %v", got)
	}
	recs := finish()
	if len(recs) != 3 {
		t.Fatalf("%d lines", len(recs))
	}
	// Lines come in completion order: the blocked request ends last.
	q := recs[0]
	if q.Policy != PolicyQueueAware || q.InFlight["a"] != 1 || q.Scores[0].InFlight != 1 || !near(q.Scores[0].ScoreMs, 2.2) || q.Host != "b" {
		t.Errorf("queue-aware line %+v", q)
	}
	if last := recs[2]; last.Host != "a" || last.InFlight["a"] != 0 || last.Status != 200 {
		t.Errorf("blocked line %+v", last)
	}
}

func TestProxyUpstreamFailure(t *testing.T) {
	a := newTestUpstream(t, "a")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := testConfig(a.srv.URL, dead)
	cfg.UpstreamTimeoutMs = 2000
	p, srv, finish := startProxy(t, cfg)
	// network-only sends /serial?n=12 to b, which is down.
	resp, body := get(t, srv.URL+"/serial?n=12", "network-only")
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderHost) != "b" || !strings.Contains(body, "upstream b") {
		t.Errorf("status %d host %q body %q", resp.StatusCode, resp.Header.Get(HeaderHost), body)
	}
	if a.Hits.Load() != 0 {
		t.Errorf("the failed request reached a: the proxy rerouted")
	}
	// a still serves.
	if resp, _ := get(t, srv.URL+"/serial?n=12", "user-first"); resp.StatusCode != 200 {
		t.Errorf("a: %d", resp.StatusCode)
	}
	if got := p.InFlight(); got["b"] != 0 {
		t.Errorf("in flight after failure %v", got)
	}
	recs := finish()
	if len(recs) != 2 {
		t.Fatalf("%d lines", len(recs))
	}
	f := recs[0]
	if f.Status != 502 || f.UpstreamStatus != 0 || f.Host != "b" || !strings.Contains(f.Error, "connect") || f.Policy != PolicyNetworkOnly {
		t.Errorf("failure line %+v", f)
	}
}

func TestProxyRefusals(t *testing.T) {
	a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
	_, srv, finish := startProxy(t, testConfig(a.srv.URL, b.srv.URL))
	for _, tc := range []struct {
		path, policy string
		status       int
		err          string
	}{
		{"/nope", "", 404, "unknown route /nope"},
		{"/serial", "", 400, "needs the n query parameter"},
		{"/serial?n=x", "", 400, "not an integer"},
		{"/feed", "fastest", 400, "unknown policy"},
	} {
		resp, body := get(t, srv.URL+tc.path, tc.policy)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.err) || resp.Header.Get(HeaderHost) != "" {
			t.Errorf("%s: %d %q", tc.path, resp.StatusCode, body)
		}
	}
	if a.Hits.Load()+b.Hits.Load() != 0 {
		t.Error("a refused request reached an upstream")
	}
	recs := finish()
	if len(recs) != 4 {
		t.Fatalf("%d lines", len(recs))
	}
	for _, r := range recs {
		if r.Status < 400 || r.Error == "" || r.Host != "" {
			t.Errorf("refusal line %+v", r)
		}
	}
	if recs[0].Route != "/nope" || recs[3].Route != "/feed" {
		t.Errorf("routes %q %q", recs[0].Route, recs[3].Route)
	}
}

func TestProxyConnections(t *testing.T) {
	for _, perRequest := range []bool{false, true} {
		a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
		cfg := testConfig(a.srv.URL, b.srv.URL)
		cfg.DisableKeepAlives = perRequest
		_, srv, finish := startProxy(t, cfg)
		const n = 8
		for range n {
			resp, _ := get(t, srv.URL+"/feed", "user-first")
			want := ConnKeepAlive
			if perRequest {
				want = ConnPerRequest
			}
			if resp.Header.Get(HeaderConn) != want {
				t.Errorf("conn header %q, want %q", resp.Header.Get(HeaderConn), want)
			}
		}
		recs := finish()
		reused := 0
		for _, r := range recs {
			if r.KeepAlive == perRequest {
				t.Errorf("keep_alive %v logged with per-request %v", r.KeepAlive, perRequest)
			}
			if r.ConnReused {
				reused++
			}
		}
		if perRequest {
			if got := a.Conns.Load(); got != n {
				t.Errorf("per-request: %d upstream connections for %d requests", got, n)
			}
			if reused != 0 {
				t.Errorf("per-request: %d reused", reused)
			}
		} else {
			if got := a.Conns.Load(); got != 1 {
				t.Errorf("keep-alive: %d upstream connections for %d sequential requests", got, n)
			}
			if reused != n-1 {
				t.Errorf("keep-alive: %d reused, want %d", reused, n-1)
			}
		}
	}
}

func TestProxyConcurrentInFlight(t *testing.T) {
	a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
	p, srv, finish := startProxy(t, testConfig(a.srv.URL, b.srv.URL))
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", srv.URL+"/serial?n="+[]string{"0", "3", "12"}[i%3], nil)
			req.Header.Set(HeaderPolicy, string(Policies[i%len(Policies)]))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	if got := p.InFlight(); got["a"] != 0 || got["b"] != 0 {
		t.Errorf("in flight %v", got)
	}
	if recs := finish(); len(recs) != 40 {
		t.Errorf("%d lines for 40 requests", len(recs))
	}
}

const exampleConfig = `{
  "listen": "127.0.0.1:0",
  "upstreams": [
    {"name": "compute-a", "url": "http://compute-a:8080"},
    {"name": "compute-b", "url": "http://compute-b:8080", "client_path_ms": 1.48}
  ],
  "calibration": {
    "hosts": [
      {"name": "compute-a", "connect_p50_ms": 0.088, "health_p50_ms": 0.741, "select1_p50_ms": 0.355},
      {"name": "compute-b", "connect_p50_ms": 0.601, "health_p50_ms": 0.9, "select1_p50_ms": 0.231, "service_time_ms": 0.4}
    ],
    "routes": [
      {"path": "/feed", "n_serial": 3, "p50_ms": {"compute-a": 2.3, "compute-b": 2.1}},
      {"path": "/serial", "n_serial": 0, "per_n": true, "p50_ms": {"compute-a": 1.04, "compute-b": 1.2}}
    ]
  },
  "default_policy": "profiled",
  "disable_keep_alives": true,
  "log_path": "decisions.jsonl"
}`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultPolicy != PolicyProfiled || !c.DisableKeepAlives || len(c.Upstreams) != 2 || c.Calibration.Routes[1].PerN != true {
		t.Errorf("%+v", c)
	}
	// The upstream's client path replaces the calibration's in the proxy.
	p, err := NewProxy(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if h, _ := p.cal.Host("compute-b"); h.ClientPath() != 1.48 {
		t.Errorf("client path %v", h.ClientPath())
	}
	if h, _ := c.Calibration.Host("compute-b"); h.ClientPathMs != 0 {
		t.Error("NewProxy changed the caller's calibration")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.json")
	os.WriteFile(path, []byte(exampleConfig), 0o644)
	if _, err := LoadConfig(path); err != nil {
		t.Error(err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "none.json")); err == nil {
		t.Error("missing file: no error")
	}
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"unknown field", `"listen"`, `"listen_on"`, "unknown field"},
		{"unknown upstream", `{"name": "compute-b", "url"`, `{"name": "compute-c", "url"`, "not a calibrated host"},
		{"bad url", `"http://compute-a:8080"`, `"compute-a:8080"`, "want http://host[:port]"},
		{"url with query", `"http://compute-a:8080"`, `"http://compute-a:8080/?x=1"`, "no query"},
		{"bad policy", `"profiled"`, `"closest"`, "default_policy"},
		{"bad calibration", `"select1_p50_ms": 0.355`, `"select1_p50_ms": 0`, "select1_p50_ms is zero"},
		{"trailing data", `"log_path": "decisions.jsonl"
}`, `"log_path": "decisions.jsonl"
} {}`, "after the JSON object"},
	} {
		b := strings.Replace(exampleConfig, tc.from, tc.to, 1)
		if b == exampleConfig {
			t.Fatalf("%s: replacement did not apply", tc.name)
		}
		os.WriteFile(path, []byte(b), 0o644)
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q and the file name", tc.name, err, tc.want)
		}
	}
	c2 := c
	c2.Upstreams = c.Upstreams[:1]
	if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), "1 upstreams for 2") {
		t.Errorf("missing upstream: %v", err)
	}
}

func TestServe(t *testing.T) {
	a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
	cfg := testConfig(a.srv.URL, b.srv.URL)
	cfg.LogPath = filepath.Join(t.TempDir(), "out", "decisions.jsonl")
	addr, stop := proxytest.Serve(t, Server(cfg).Serve)
	url := "http://" + addr
	for i := range 3 {
		resp, _ := get(t, url+"/serial?n=12", "network-only", HeaderRequestID, string(rune('x'+i)))
		if resp.StatusCode != 200 || resp.Header.Get(HeaderHost) != "b" {
			t.Errorf("status %d host %q", resp.StatusCode, resp.Header.Get(HeaderHost))
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(cfg.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := proxyserve.ReadLog[DecisionRecord](f)
	if err != nil || len(recs) != 3 || recs[2].RequestID != "z" {
		t.Errorf("%d lines, %v", len(recs), err)
	}
	// Each line is one JSON object with the documented keys.
	b2, _ := os.ReadFile(cfg.LogPath)
	var m map[string]any
	if err := json.Unmarshal(bytes.SplitN(b2, []byte("\n"), 2)[0], &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "route", "policy", "scores", "host", "in_flight", "status", "upstream_status", "upstream_ms", "keep_alive"} {
		if _, ok := m[k]; !ok {
			t.Errorf("log line lacks %q: %s", k, b2)
		}
	}

	cfg.Listen = "256.0.0.1:1"
	if err := Server(cfg).ListenAndServe(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("bad address: %v", err)
	}
	cfg.Upstreams = nil
	if err := Server(cfg).ListenAndServe(context.Background()); err == nil {
		t.Error("bad config: no error")
	}
}

// A decision log line keeps its fields' names and order: logs written
// before still read, and a diff of two logs stays a diff of values.
func TestDecisionRecordLine(t *testing.T) {
	rec := DecisionRecord{
		Head:  proxyserve.Head{Time: time.Date(2026, 12, 4, 1, 2, 3, 0, time.UTC), Seq: 7, RequestID: "r-1", Method: "GET"},
		Route: "/serial?n=3", N: 3, Policy: PolicyProfiled, KeepAlive: true,
		Scores: []Score{{Host: "a"}}, Host: "a", InFlight: map[string]int{"a": 1, "b": 0},
		Outcome: proxyserve.Outcome{Status: 200, UpstreamStatus: 200, UpstreamMs: 1.5, TotalMs: 1.75, ConnReused: true, Error: "e"},
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-12-04T01:02:03Z","seq":7,"request_id":"r-1","method":"GET","route":"/serial?n=3","n":3,` +
		`"policy":"profiled","keep_alive":true,"scores":[` + mustJSON(t, Score{Host: "a"}) + `],"host":"a","in_flight":{"a":1,"b":0},` +
		`"status":200,"upstream_status":200,"upstream_ms":1.5,"total_ms":1.75,"conn_reused":true,"error":"e"}`
	if string(b) != want {
		t.Errorf("line\n%s\nwant\n%s", b, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProxyBodyAbortLogged(t *testing.T) {
	// b promises 100 bytes, sends 5 and hangs up.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		io.WriteString(w, "short")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer bad.Close()
	a := newTestUpstream(t, "a")
	p, srv, finish := startProxy(t, testConfig(a.srv.URL, bad.URL))
	req, _ := http.NewRequest("GET", srv.URL+"/serial?n=12", nil)
	req.Header.Set(HeaderPolicy, "network-only") // b
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Error("the client got a whole response from a broken upstream")
	}
	if got := p.InFlight(); got["b"] != 0 {
		t.Errorf("in flight %v", got)
	}
	recs := finish()
	if len(recs) != 1 {
		t.Fatalf("%d lines", len(recs))
	}
	last := recs[0]
	if last.Host != "b" || last.UpstreamStatus != 200 || !strings.Contains(last.Error, "aborted") {
		t.Errorf("line %+v", last)
	}
}

func TestProxyPolicyFromQuery(t *testing.T) {
	a, b := newTestUpstream(t, "a"), newTestUpstream(t, "b")
	_, srv, finish := startProxy(t, testConfig(a.srv.URL, b.srv.URL))
	// network-only sends /serial?n=3 to b, user-first to a (the default).
	resp, body := get(t, srv.URL+"/serial?n=3&"+QueryPolicy+"=network-only", "")
	if resp.Header.Get(HeaderHost) != "b" || resp.Header.Get(HeaderPolicy) != "network-only" || body != "b /serial?n=3" {
		t.Errorf("query policy: host %q policy %q body %q", resp.Header.Get(HeaderHost), resp.Header.Get(HeaderPolicy), body)
	}
	// The header wins over the query.
	resp, _ = get(t, srv.URL+"/serial?n=3&"+QueryPolicy+"=network-only", "user-first")
	if resp.Header.Get(HeaderHost) != "a" || resp.Header.Get(HeaderPolicy) != "user-first" {
		t.Errorf("header and query: host %q policy %q", resp.Header.Get(HeaderHost), resp.Header.Get(HeaderPolicy))
	}
	if resp, _ := get(t, srv.URL+"/feed?"+QueryPolicy+"=nearest", ""); resp.StatusCode != 400 {
		t.Errorf("unknown policy in the query: status %d", resp.StatusCode)
	}
	if recs := finish(); len(recs) != 3 || recs[0].Route != "/serial?n=3" {
		t.Errorf("log %+v", recs)
	}
}
