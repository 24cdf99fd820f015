package placement

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rttlab/rttlab/internal/proxyserve"
)

// Headers the proxy reads and writes.
const (
	// HeaderPolicy on a request chooses its policy (else the default); on
	// the response it names the policy applied.
	HeaderPolicy = "X-Rttlab-Policy"
	// HeaderHost on the response names the chosen upstream.
	HeaderHost = "X-Rttlab-Host"
	// HeaderConn on the response says how the proxy connects upstream:
	// ConnKeepAlive or ConnPerRequest.
	HeaderConn = "X-Rttlab-Conn"
	// HeaderRequestID on a request is copied into its decision log line,
	// so that client samples can be joined with decisions.
	HeaderRequestID = proxyserve.HeaderRequestID
	// QueryPolicy, a query parameter, chooses the policy like HeaderPolicy
	// (the header wins when both are given) so that a load client that
	// sends only paths can interleave policies; the proxy removes it
	// before forwarding.
	QueryPolicy = "rttlab_policy"
)

// Values of HeaderConn.
const (
	ConnKeepAlive  = "keep-alive"
	ConnPerRequest = "new-per-request"
)

// Defaults of Config.
const (
	DefaultListen          = proxyserve.DefaultListen
	DefaultPolicy          = PolicyUserFirst
	DefaultUpstreamTimeout = proxyserve.DefaultUpstreamTimeout
)

// Upstream is one compute host behind the proxy.
type Upstream struct {
	// Name is the host's name in the calibration.
	Name string `json:"name"`
	// URL is its origin, e.g. "http://compute-a:8080".
	URL string `json:"url"`
	// ClientPathMs, when above zero, is the client-path estimate for this
	// host; it replaces the calibration's client path.
	ClientPathMs float64 `json:"client_path_ms,omitempty"`
}

// Config configures the routing proxy; it is read from JSON (LoadConfig).
type Config struct {
	// Listen is the proxy's address (DefaultListen when empty).
	Listen string `json:"listen,omitempty"`
	// Upstreams lists the compute hosts; their names are exactly the
	// calibration's hosts.
	Upstreams   []Upstream  `json:"upstreams"`
	Calibration Calibration `json:"calibration"`
	// DefaultPolicy applies when a request has no HeaderPolicy
	// (DefaultPolicy, user-first, when empty).
	DefaultPolicy Policy `json:"default_policy,omitempty"`
	// DisableKeepAlives opens a new upstream connection per request (the
	// write-up's proxy did); the default keeps a pool per upstream.
	DisableKeepAlives bool `json:"disable_keep_alives,omitempty"`
	// LogPath is the decision log (JSON lines, appended); empty or "-"
	// writes it to standard output.
	LogPath string `json:"log_path,omitempty"`
	// UpstreamTimeoutMs bounds the connect and the wait for the response
	// headers of one upstream request (DefaultUpstreamTimeout when 0).
	UpstreamTimeoutMs int `json:"upstream_timeout_ms,omitempty"`
}

// ParseConfig reads a Config from JSON (unknown fields are errors) and
// validates it.
func ParseConfig(b []byte) (Config, error) { return proxyserve.ParseConfig[Config](b, "proxy") }

// LoadConfig reads and validates the JSON config at path.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read proxy config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Validate checks the calibration, that the upstreams are exactly its
// hosts with http(s) origins, the default policy and the timeout.
func (c Config) Validate() error {
	if err := c.Calibration.Validate(); err != nil {
		return fmt.Errorf("proxy config: calibration: %w", err)
	}
	if len(c.Upstreams) != len(c.Calibration.Hosts) {
		return fmt.Errorf("proxy config: %d upstreams for %d calibrated hosts", len(c.Upstreams), len(c.Calibration.Hosts))
	}
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		if _, ok := c.Calibration.Host(u.Name); !ok {
			return fmt.Errorf("proxy config: upstreams[%d]: %q is not a calibrated host", i, u.Name)
		}
		if err := proxyserve.CheckUpstream(seen, i, u.Name, u.URL, false); err != nil {
			return fmt.Errorf("proxy config: %w", err)
		}
		if err := checkMs("client_path_ms", u.ClientPathMs, false); err != nil {
			return fmt.Errorf("proxy config: upstream %s: %w", u.Name, err)
		}
	}
	if c.DefaultPolicy != "" {
		if _, err := ParsePolicy(string(c.DefaultPolicy)); err != nil {
			return fmt.Errorf("proxy config: default_policy: %w", err)
		}
	}
	if c.UpstreamTimeoutMs < 0 {
		return fmt.Errorf("proxy config: upstream_timeout_ms is negative (%d)", c.UpstreamTimeoutMs)
	}
	return nil
}

// DecisionRecord is one line of the decision log: one request through the
// proxy, whatever became of it.
type DecisionRecord struct {
	proxyserve.Head
	// Route is Route.String() ("/feed", "/serial?n=12"); for a request the
	// calibration does not know, its path.
	Route  string `json:"route"`
	N      int    `json:"n"`
	Policy Policy `json:"policy,omitempty"`
	// KeepAlive is false when the proxy opens a new upstream connection
	// per request.
	KeepAlive bool `json:"keep_alive"`
	// Scores are every host's estimates and score under the policy.
	Scores []Score `json:"scores,omitempty"`
	// Host is the chosen upstream ("" when the request was refused before
	// a choice).
	Host string `json:"host,omitempty"`
	// InFlight is every upstream's requests in flight when the choice was
	// made, this request not counted.
	InFlight map[string]int `json:"in_flight,omitempty"`
	proxyserve.Outcome
}

// Proxy is the routing reverse proxy: it decides per request, forwards to
// the chosen upstream, and logs every decision. When the upstream fails the
// request fails with 502 and the log says why; the proxy never retries on
// another host.
type Proxy struct {
	cal       Calibration
	def       Policy
	keepAlive bool
	ups       map[string]*proxyserve.Upstream
	// The core's Close flushes and stops the decision log and closes idle
	// upstream connections; call it after the server stopped handling
	// requests (later requests are still routed but not logged).
	*proxyserve.Core[DecisionRecord]

	mu       sync.Mutex
	inFlight map[string]int
}

// NewProxy builds the proxy of a validated config; decision lines go to
// logw (discarded when nil), written by a goroutine of their own so that
// logging adds nothing to a request's latency. Close it to flush the log.
func NewProxy(cfg Config, logw io.Writer) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Proxy{
		cal:       cfg.Calibration,
		def:       DefaultPolicy,
		keepAlive: !cfg.DisableKeepAlives,
		ups:       map[string]*proxyserve.Upstream{},
		inFlight:  map[string]int{},
	}
	if cfg.DefaultPolicy != "" {
		p.def, _ = ParsePolicy(string(cfg.DefaultPolicy))
	}
	// The calibration is copied so the upstreams' client paths can
	// replace its own without touching the caller's config.
	p.cal.Hosts = slices.Clone(cfg.Calibration.Hosts)
	opts := proxyserve.UpstreamOptions{Who: "rttlab proxy", DisableKeepAlives: cfg.DisableKeepAlives,
		Timeout: time.Duration(cfg.UpstreamTimeoutMs) * time.Millisecond}
	ups := make([]*proxyserve.Upstream, 0, len(cfg.Upstreams))
	for _, u := range cfg.Upstreams {
		for i := range p.cal.Hosts {
			if p.cal.Hosts[i].Name == u.Name && u.ClientPathMs > 0 {
				p.cal.Hosts[i].ClientPathMs = u.ClientPathMs
			}
		}
		target, _ := proxyserve.ParseUpstreamURL(u.URL, false)
		up := proxyserve.NewUpstream(u.Name, target, opts)
		p.ups[u.Name] = up
		ups = append(ups, up)
	}
	p.Core = proxyserve.NewCore[DecisionRecord](ups, logw)
	return p, nil
}

// KeepAlive reports whether the proxy keeps upstream connections alive.
func (p *Proxy) KeepAlive() bool { return p.keepAlive }

// InFlight returns a copy of the requests in flight per upstream.
func (p *Proxy) InFlight() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.ups))
	for name := range p.ups {
		out[name] = p.inFlight[name]
	}
	return out
}

// decide applies the policy under the in-flight lock and counts the request
// against the chosen host, so that concurrent decisions see each other.
func (p *Proxy) decide(policy Policy, route Route, est []Estimate) (Decision, map[string]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	snap := make(map[string]int, len(p.ups))
	for name := range p.ups {
		snap[name] = p.inFlight[name]
	}
	d, err := Choose(policy, route, est, snap)
	if err == nil {
		p.inFlight[d.Host]++
	}
	return d, snap, err
}

func (p *Proxy) done(host string) {
	p.mu.Lock()
	p.inFlight[host]--
	p.mu.Unlock()
}

func (p *Proxy) connHeader() string {
	if p.keepAlive {
		return ConnKeepAlive
	}
	return ConnPerRequest
}

// ServeHTTP routes one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := DecisionRecord{Head: p.Begin(r, start), Route: r.URL.Path, KeepAlive: p.keepAlive}
	w.Header().Set(HeaderConn, p.connHeader())
	refuse := func(status int, err error) {
		rec.Outcome = proxyserve.Refuse(w, "rttlab proxy", start, status, err)
		p.Log(rec)
	}
	queryPolicy := proxyserve.TakeQuery(r.URL, QueryPolicy)
	route, err := p.cal.ParseRoute(r.URL)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, ErrUnknownRoute) {
			status = http.StatusNotFound
		}
		refuse(status, err)
		return
	}
	rec.Route, rec.N = route.String(), route.N
	policy := p.def
	if h := cmp.Or(r.Header.Get(HeaderPolicy), queryPolicy); h != "" {
		if policy, err = ParsePolicy(h); err != nil {
			refuse(http.StatusBadRequest, err)
			return
		}
	}
	rec.Policy = policy
	w.Header().Set(HeaderPolicy, string(policy))
	est, err := p.cal.Estimates(route)
	if err != nil {
		refuse(http.StatusInternalServerError, err)
		return
	}
	d, snap, err := p.decide(policy, route, est)
	rec.Scores, rec.InFlight = d.Scores, snap
	if err != nil {
		refuse(http.StatusInternalServerError, err)
		return
	}
	rec.Host = d.Host
	w.Header().Set(HeaderHost, d.Host)

	p.ups[d.Host].Forward(w, r, func(o proxyserve.Outcome) {
		p.done(d.Host)
		rec.Outcome = o.Since(start)
		p.Log(rec)
	})
}

// Server is the proxy of cfg, served by proxyserve under the name "proxy":
// its ListenAndServe runs on cfg.Listen until the context ends, then shuts
// down gracefully (in-flight requests get up to 10 s) and flushes the
// decision log, which proxyserve.ReadLog[DecisionRecord] reads back. This
// is the whole proxy a container needs: `rttlab agent proxy` only has to
// load a Config.
func Server(cfg Config) proxyserve.Server {
	return proxyserve.ServerOf("proxy", cfg, cfg.Listen, cfg.LogPath, NewProxy, (*Proxy).startAttrs)
}

// startAttrs are the attributes of the proxy's start line.
func (p *Proxy) startAttrs() []any { return []any{"policy", p.def, "conn", p.connHeader()} }
