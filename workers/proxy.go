package workers

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/rttlab/rttlab/internal/proxyserve"
)

// Proxy defaults.
const (
	DefaultListen          = proxyserve.DefaultListen
	DefaultUpstreamTimeout = proxyserve.DefaultUpstreamTimeout
)

// Upstream is one single-mode Puma process behind the proxy.
type Upstream struct {
	// Name identifies the worker in headers and the log, e.g. "w0".
	Name string `json:"name"`
	// URL is its origin, e.g. "http://puma-0:3000".
	URL string `json:"url"`
}

// ProxyConfig configures the front proxy; `rttlab agent workers-proxy
// --config-json` reads it.
type ProxyConfig struct {
	// Listen is the proxy's address (DefaultListen when empty).
	Listen    string     `json:"listen,omitempty"`
	Upstreams []Upstream `json:"upstreams"`
	// Threads per upstream (the layout's T): only recorded, as each
	// decision's Saturated flag; it does not change a choice.
	Threads int `json:"threads"`
	// Rule applies when a request names none (jsq when empty).
	Rule Rule `json:"rule,omitempty"`
	// Ties: random (default) or first; see Chooser.
	Ties Ties `json:"ties,omitempty"`
	// Seed seeds JSQ's random ties and P2C's draws.
	Seed uint64 `json:"seed"`
	// LogPath is the decision log (JSON lines, appended); empty or "-"
	// writes to standard output.
	LogPath string `json:"log_path,omitempty"`
	// UpstreamTimeoutMs bounds the connect and the wait for the response
	// headers (DefaultUpstreamTimeout when 0).
	UpstreamTimeoutMs int `json:"upstream_timeout_ms,omitempty"`
	// DisableKeepAlives opens a new upstream connection per request; the
	// default keeps a pool per upstream.
	DisableKeepAlives bool `json:"disable_keep_alives,omitempty"`
}

// ParseProxyConfig reads a ProxyConfig from JSON (unknown fields are
// errors) and validates it.
func ParseProxyConfig(b []byte) (ProxyConfig, error) {
	return proxyserve.ParseConfig[ProxyConfig](b, "workers proxy")
}

// Validate checks the upstreams (named, distinct, http origins), the
// threads, the rule, the ties and the timeout.
func (c ProxyConfig) Validate() error {
	if len(c.Upstreams) == 0 {
		return errors.New("workers proxy config: no upstreams")
	}
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		if err := proxyserve.CheckUpstream(seen, i, u.Name, u.URL, true); err != nil {
			return fmt.Errorf("workers proxy config: %w", err)
		}
	}
	if c.Threads < 0 {
		return fmt.Errorf("workers proxy config: threads %d is negative", c.Threads)
	}
	if c.Rule != "" {
		if _, err := ParseRule(string(c.Rule)); err != nil {
			return fmt.Errorf("workers proxy config: rule: %w", err)
		}
	}
	if _, err := ParseTies(string(c.Ties)); err != nil {
		return fmt.Errorf("workers proxy config: %w", err)
	}
	if c.UpstreamTimeoutMs < 0 {
		return fmt.Errorf("workers proxy config: upstream_timeout_ms %d is negative", c.UpstreamTimeoutMs)
	}
	return nil
}

// Decision is one line of the decision log: one request through the
// proxy, whatever became of it.
type Decision struct {
	proxyserve.Head
	Path string `json:"path"`
	// Policy is the policy applied ("proxy:jsq"), empty when the request
	// was refused before one applied.
	Policy string `json:"policy,omitempty"`
	// Worker is the chosen upstream's name and Index its place in the
	// config (−1 when none was chosen).
	Worker string `json:"worker,omitempty"`
	Index  int    `json:"index"`
	// InFlight is every upstream's requests in flight when the choice
	// was made, in config order, this request not counted.
	InFlight []int `json:"in_flight,omitempty"`
	// Idle counts the upstreams with none in flight at the choice.
	Idle int `json:"idle"`
	// Saturated is set when the chosen upstream already had Threads or
	// more in flight (the request waits in that worker for a thread).
	Saturated bool `json:"saturated,omitempty"`
	proxyserve.Outcome
	// AssignedEv and ReleasedEv place the request's hold on its worker in
	// the proxy's event order (1, 2, ...: every assignment and release,
	// numbered under the lock that updates the in-flight counts): the
	// worker counted the request in flight from the one to the other.
	// 0 where the request was never assigned.
	AssignedEv uint64 `json:"assigned_ev,omitempty"`
	ReleasedEv uint64 `json:"released_ev,omitempty"`
}

// BusyWhileIdle reports whether the decision sent its request to a worker
// with requests in flight while another had none: what JSQ never does.
func (d Decision) BusyWhileIdle() bool {
	return d.Index >= 0 && d.Index < len(d.InFlight) && d.InFlight[d.Index] > 0 && d.Idle > 0
}

// Proxy is the front proxy of the proxy policies: an http.Handler that
// assigns every request to one of W upstreams by its rule, forwards it
// over a keep-alive pool, names the upstream in HeaderWorker, and logs
// the decision. A failed upstream request fails with 502 and is logged;
// it is never retried on another upstream, which would hide the failure
// and change the assignment under study.
type Proxy struct {
	def     Rule
	threads int
	ups     []*proxyserve.Upstream
	// The core's Close flushes the decision log and closes idle upstream
	// connections; call it after the server stopped handling requests.
	*proxyserve.Core[Decision]

	mu       sync.Mutex // guards inFlight, events and chooser
	inFlight []int
	events   uint64 // assignments and releases so far, in lock order
	chooser  *Chooser
}

// NewProxy builds the proxy of a valid config; decision lines go to logw
// (discarded when nil) from a goroutine of their own. Close flushes them.
func NewProxy(cfg ProxyConfig, logw io.Writer) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ties, _ := ParseTies(string(cfg.Ties))
	p := &Proxy{
		def:      RuleJSQ,
		threads:  cfg.Threads,
		inFlight: make([]int, len(cfg.Upstreams)),
		chooser:  NewChooser(cfg.Seed, ties),
	}
	if cfg.Rule != "" {
		p.def, _ = ParseRule(string(cfg.Rule))
	}
	opts := proxyserve.UpstreamOptions{Who: "rttlab workers proxy", DisableKeepAlives: cfg.DisableKeepAlives,
		DisableCompression: true, Timeout: time.Duration(cfg.UpstreamTimeoutMs) * time.Millisecond}
	for _, u := range cfg.Upstreams {
		target, _ := proxyserve.ParseUpstreamURL(u.URL, true)
		p.ups = append(p.ups, proxyserve.NewUpstream(u.Name, target, opts))
	}
	p.Core = proxyserve.NewCore[Decision](p.ups, logw)
	return p, nil
}

// InFlight returns a copy of the requests in flight per upstream, in
// config order.
func (p *Proxy) InFlight() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.inFlight...)
}

// decide chooses under the lock and counts the request against the
// chosen upstream, so that concurrent decisions see each other.
func (p *Proxy) decide(rule Rule) (int, []int, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	snap := append([]int(nil), p.inFlight...)
	i, err := p.chooser.Choose(rule, snap)
	if err != nil {
		return i, snap, 0, err
	}
	p.inFlight[i]++
	p.events++
	return i, snap, p.events, nil
}

// done releases a request from upstream i and returns the release's
// event number.
func (p *Proxy) done(i int) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight[i]--
	p.events++
	return p.events
}

// ServeHTTP assigns and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := Decision{Head: p.Begin(r, start), Index: -1}
	refuse := func(status int, err error) {
		rec.Outcome = proxyserve.Refuse(w, "rttlab workers proxy", start, status, err)
		p.Log(rec)
	}
	queryRule := proxyserve.TakeQuery(r.URL, QueryPolicy)
	rec.Path = r.URL.RequestURI()
	rule := p.def
	if s := cmp.Or(r.Header.Get(HeaderPolicy), queryRule); s != "" {
		var err error
		if rule, err = ParseRule(s); err != nil {
			refuse(http.StatusBadRequest, err)
			return
		}
	}
	r.Header.Del(HeaderPolicy)
	pol := Policy{Kind: KindProxy, Rule: rule}.String()
	rec.Policy = pol
	i, snap, ev, err := p.decide(rule)
	if err != nil {
		refuse(http.StatusInternalServerError, err)
		return
	}
	up := p.ups[i]
	rec.Worker, rec.Index, rec.InFlight, rec.AssignedEv = up.Name, i, snap, ev
	for _, n := range snap {
		if n == 0 {
			rec.Idle++
		}
	}
	rec.Saturated = p.threads > 0 && snap[i] >= p.threads
	w.Header().Set(HeaderPolicy, pol)
	w.Header().Set(HeaderWorker, up.Name)

	up.Forward(w, r, func(o proxyserve.Outcome) {
		rec.ReleasedEv = p.done(i)
		rec.Outcome = o.Since(start)
		p.Log(rec)
	})
}

// Server is the proxy of cfg, served by proxyserve under the name "workers
// proxy": its ListenAndServe runs on cfg.Listen until the context ends,
// then shuts down gracefully (requests in flight get up to 10 s) and
// flushes the decision log, which proxyserve.ReadLog[Decision] reads
// back. It is all a container needs.
func Server(cfg ProxyConfig) proxyserve.Server {
	return proxyserve.ServerOf("workers proxy", cfg, cfg.Listen, cfg.LogPath, NewProxy, (*Proxy).startAttrs)
}

// startAttrs are the attributes of the proxy's start line.
func (p *Proxy) startAttrs() []any { return []any{"rule", p.def, "upstreams", len(p.ups)} }
