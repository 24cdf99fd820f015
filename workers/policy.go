package workers

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind says how requests reach the workers.
type Kind string

const (
	// KindPuma is Puma in cluster mode: W forked workers share one
	// listening socket and race to accept each connection.
	KindPuma Kind = "puma"
	// KindProxy is W single-mode Puma processes (T threads each) behind
	// the Go front proxy of this package, which assigns every request.
	KindProxy Kind = "proxy"
)

// Rule is an assignment rule of the front proxy.
type Rule string

// The proxy's rules.
const (
	// RuleJSQ (join the shortest queue) sends each request to the worker
	// with the fewest requests in flight, so an idle worker first.
	RuleJSQ Rule = "jsq"
	// RuleRoundRobin sends requests to the workers in turn, blind to
	// their load: the assignment the seed likens Puma's to.
	RuleRoundRobin Rule = "round-robin"
	// RuleP2C (power of two choices) draws two distinct workers at random
	// and sends the request to the one with fewer in flight.
	RuleP2C Rule = "p2c"
)

// Rules lists the proxy's rules in report order.
var Rules = []Rule{RuleJSQ, RuleRoundRobin, RuleP2C}

// ParseRule accepts a rule name, with or without the "proxy:" prefix
// (case-insensitive, blanks ignored).
func ParseRule(s string) (Rule, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.TrimPrefix(v, string(KindProxy)+":")
	for _, r := range Rules {
		if Rule(v) == r {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown proxy rule %q (want jsq, round-robin or p2c)", s)
}

// Puma's wait_for_less_busy_worker.
const (
	// PumaDefaultWaitS is Puma 6's default wait_for_less_busy_worker
	// (Puma::Configuration::DEFAULTS, 0.005 s; Debian trixie ships 6.6).
	PumaDefaultWaitS = 0.005
	// MaxWaitS bounds a configured wait: a busy worker that waits longer
	// than a second before accepting is no longer a scheduling nudge.
	MaxWaitS = 1.0
)

// Policy is one assignment policy of the study. Its text form, used in
// plan files, results and reports, is one of
//
//	puma:wflbw=0         cluster mode, wait_for_less_busy_worker 0: the
//	                     plain accept race the seed describes
//	puma:wflbw=default   cluster mode with Puma's default wait (0.005 s in
//	                     Puma 6; the config line is left out so Puma's own
//	                     default applies)
//	puma:wflbw=SECONDS   cluster mode with that wait, e.g. puma:wflbw=0.05
//	proxy:jsq            front proxy, join the shortest queue
//	proxy:round-robin    front proxy, round robin
//	proxy:p2c            front proxy, power of two choices
//
// wflbw is Puma's wait_for_less_busy_worker: before accepting a
// connection, a worker with at least one busy thread waits up to that
// long (less when one of its requests finishes first), so that an idle
// worker, woken by the same readable socket, accepts first. Puma applies
// it only in cluster mode and only on MRI.
type Policy struct {
	Kind Kind
	// WaitS is the puma policies' wait_for_less_busy_worker in seconds
	// (PumaDefaultWaitS when WaitDefault).
	WaitS float64
	// WaitDefault marks puma:wflbw=default.
	WaitDefault bool
	// Rule is the proxy policies' assignment rule.
	Rule Rule
}

// Named policies.
var (
	// AcceptRace is the plain accept race, the baseline of every change.
	AcceptRace = Policy{Kind: KindPuma}
	// PumaDefault is cluster mode with Puma's default wait.
	PumaDefault = Policy{Kind: KindPuma, WaitS: PumaDefaultWaitS, WaitDefault: true}
	// ProxyJSQ is the ideal scheduling of the seed, done by the proxy.
	ProxyJSQ = Policy{Kind: KindProxy, Rule: RuleJSQ}
	// ProxyRoundRobin is load-blind assignment through the same proxy.
	ProxyRoundRobin = Policy{Kind: KindProxy, Rule: RuleRoundRobin}
	// ProxyP2C is power of two choices through the same proxy.
	ProxyP2C = Policy{Kind: KindProxy, Rule: RuleP2C}
)

// ParsePolicy reads a policy's text form (case-insensitive, blanks
// ignored).
func ParsePolicy(s string) (Policy, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	kind, arg, ok := strings.Cut(v, ":")
	if !ok {
		return Policy{}, unknownPolicy(s)
	}
	switch Kind(kind) {
	case KindPuma:
		key, val, ok := strings.Cut(arg, "=")
		if !ok || key != "wflbw" {
			return Policy{}, unknownPolicy(s)
		}
		if val == "default" {
			return PumaDefault, nil
		}
		w, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
			return Policy{}, fmt.Errorf("policy %q: wflbw %q is not a number of seconds or default", s, val)
		}
		if w < 0 || w > MaxWaitS {
			return Policy{}, fmt.Errorf("policy %q: wflbw %v s outside 0..%v s", s, w, MaxWaitS)
		}
		return Policy{Kind: KindPuma, WaitS: w}, nil
	case KindProxy:
		r, err := ParseRule(arg)
		if err != nil {
			return Policy{}, unknownPolicy(s)
		}
		return Policy{Kind: KindProxy, Rule: r}, nil
	}
	return Policy{}, unknownPolicy(s)
}

func unknownPolicy(s string) error {
	return fmt.Errorf("unknown policy %q (want puma:wflbw=SECONDS, puma:wflbw=default, proxy:jsq, proxy:round-robin or proxy:p2c)", s)
}

// String returns the policy's text form.
func (p Policy) String() string {
	switch p.Kind {
	case KindPuma:
		if p.WaitDefault {
			return "puma:wflbw=default"
		}
		return "puma:wflbw=" + strconv.FormatFloat(p.WaitS, 'f', -1, 64)
	case KindProxy:
		return "proxy:" + string(p.Rule)
	}
	return "invalid-policy"
}

// MarshalText writes the text form.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads the text form.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Stack names what has to run for the policy: each puma policy is its
// own Puma cluster configuration, while every proxy policy runs on the
// same W single-mode processes and proxy (the proxy switches rule per
// request), so they share the stack "proxy".
func (p Policy) Stack() string {
	if p.Kind == KindProxy {
		return string(KindProxy)
	}
	return p.String()
}

// sameAs reports whether two policies configure the same thing
// (puma:wflbw=default and puma:wflbw=0.005 do).
func (p Policy) sameAs(q Policy) bool {
	if p.Kind != q.Kind {
		return false
	}
	if p.Kind == KindPuma {
		return p.WaitS == q.WaitS
	}
	return p.Rule == q.Rule
}

// PumaConfig returns the puma.rb lines of the policy's workers for layout
// l: for a puma policy a cluster of l.Workers workers with l.Threads
// threads each and its wait_for_less_busy_worker (left out for
// puma:wflbw=default, so Puma's own default applies); for a proxy policy
// one single-mode process (workers 0) with l.Threads threads, of which the
// stack runs l.Workers. Binding, the app and the hooks are the caller's.
func (p Policy) PumaConfig(l Layout) string {
	var b strings.Builder
	switch p.Kind {
	case KindPuma:
		fmt.Fprintf(&b, "workers %d\nthreads %d, %d\n", l.Workers, l.Threads, l.Threads)
		if !p.WaitDefault {
			fmt.Fprintf(&b, "wait_for_less_busy_worker %s\n", strconv.FormatFloat(p.WaitS, 'f', -1, 64))
		}
	case KindProxy:
		fmt.Fprintf(&b, "workers 0\nthreads %d, %d\n", l.Threads, l.Threads)
	}
	return b.String()
}

// Layout is a W×T configuration: W workers of T threads each.
type Layout struct {
	Workers int `json:"workers"`
	Threads int `json:"threads"`
}

// ParseLayout reads "WxT" (also "W×T" or "W*T"), e.g. "2x4".
func ParseLayout(s string) (Layout, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.NewReplacer("×", "x", "*", "x").Replace(v)
	ws, ts, ok := strings.Cut(v, "x")
	if !ok {
		return Layout{}, fmt.Errorf("configuration %q: want WORKERSxTHREADS, e.g. 2x4", s)
	}
	w, err1 := strconv.Atoi(strings.TrimSpace(ws))
	t, err2 := strconv.Atoi(strings.TrimSpace(ts))
	if err1 != nil || err2 != nil {
		return Layout{}, fmt.Errorf("configuration %q: want WORKERSxTHREADS with whole numbers, e.g. 2x4", s)
	}
	return Layout{Workers: w, Threads: t}, nil
}

// String writes "WxT".
func (l Layout) String() string { return fmt.Sprintf("%dx%d", l.Workers, l.Threads) }

// MarshalText writes "WxT".
func (l Layout) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads "WxT".
func (l *Layout) UnmarshalText(b []byte) error {
	v, err := ParseLayout(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Limits are what the host can run; plans beyond them are refused.
type Limits struct {
	MaxWorkers int
	MaxThreads int
}

// DefaultMaxThreads is the thread limit of DefaultLimits.
const DefaultMaxThreads = 64

// DefaultLimits allows up to 4 workers per CPU of the host and 64
// threads per worker.
func DefaultLimits(numCPU int) Limits {
	return Limits{MaxWorkers: 4 * max(numCPU, 1), MaxThreads: DefaultMaxThreads}
}

// Check refuses a layout outside 1..limit.
func (lim Limits) Check(l Layout) error {
	switch {
	case l.Workers < 1:
		return fmt.Errorf("configuration %s: %d workers; give at least 1", l, l.Workers)
	case l.Threads < 1:
		return fmt.Errorf("configuration %s: %d threads; give at least 1", l, l.Threads)
	case lim.MaxWorkers > 0 && l.Workers > lim.MaxWorkers:
		return fmt.Errorf("configuration %s: %d workers exceed this host's limit of %d", l, l.Workers, lim.MaxWorkers)
	case lim.MaxThreads > 0 && l.Threads > lim.MaxThreads:
		return fmt.Errorf("configuration %s: %d threads exceed the limit of %d", l, l.Threads, lim.MaxThreads)
	}
	return nil
}
