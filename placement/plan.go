package placement

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/workloads"
)

// The placement study's nodes: the client (load client and routing proxy),
// two compute hosts running the same app, and the database.
const (
	NodeClient = "client"
	NodeA      = "a"
	NodeB      = "b"
	NodeDB     = "db"
)

// PlaceNodes lists the nodes in a fixed order.
var PlaceNodes = []string{NodeClient, NodeA, NodeB, NodeDB}

// PlaceLink is the RTT added between two nodes, split half per direction.
type PlaceLink struct {
	A     string  `yaml:"a" json:"a"`
	B     string  `yaml:"b" json:"b"`
	RTTMs float64 `yaml:"rtt_ms" json:"rtt_ms"`
	line  int
}

// PlaceOneWay is a delay added to one direction of a link.
type PlaceOneWay struct {
	From string  `yaml:"from" json:"from"`
	To   string  `yaml:"to" json:"to"`
	Ms   float64 `yaml:"ms" json:"ms"`
	line int
}

func (l *PlaceLink) UnmarshalYAML(n *yaml.Node) error {
	type plain PlaceLink
	return decodeLined(n, &l.line, (*plain)(l), "a", "b", "rtt_ms")
}

func (o *PlaceOneWay) UnmarshalYAML(n *yaml.Node) error {
	type plain PlaceOneWay
	return decodeLined(n, &o.line, (*plain)(o), "from", "to", "ms")
}

// decodeLined decodes an entry n into v, a plain view of it (without its
// UnmarshalYAML), recording n's line in *line and refusing keys other
// than known.
func decodeLined(n *yaml.Node, line *int, v any, known ...string) error {
	*line = n.Line
	if err := planfile.KnownKeys(n, known...); err != nil {
		return err
	}
	return n.Decode(v)
}

// Plan describes a placement study (rttlab place).
type Plan struct {
	Name string `yaml:"name" json:"name"`
	Seed uint64 `yaml:"seed" json:"seed"`
	// Platform the database and the app run (engine.Platforms); empty: the
	// engine's own. rttlab's agents run the engine's own.
	Platform string `yaml:"platform,omitempty" json:"platform,omitempty"`
	// Emulated records that Platform ran under emulation (not the
	// engine's own): a folder is resumed only the same way.
	Emulated bool `yaml:"-" json:"emulated,omitempty"`
	// App runs on both compute hosts (Rails by default, any app with a
	// route contract).
	App    string   `yaml:"app" json:"app"`
	Routes []string `yaml:"routes" json:"routes"`
	// Links add RTT between node pairs; a pair not listed adds nothing.
	Links []PlaceLink `yaml:"links" json:"links"`
	// HeldOut adds one-way delays for the held-out phase and every phase
	// after it (routed, sweep, concurrency).
	HeldOut []PlaceOneWay `yaml:"held_out" json:"held_out"`
	// Calibration and held-out: per host and route.
	Warmup   int `yaml:"warmup" json:"warmup"`
	Requests int `yaml:"requests" json:"requests"`
	// SELECT 1 from each compute host.
	Select1Warmup int `yaml:"select1_warmup" json:"select1_warmup"`
	Select1Calls  int `yaml:"select1_calls" json:"select1_calls"`
	// Routed comparison through the proxy, per (policy, route).
	Policies       []string `yaml:"policies" json:"policies"`
	RoutedWarmup   int      `yaml:"routed_warmup" json:"routed_warmup"`
	RoutedRequests int      `yaml:"routed_requests" json:"routed_requests"`
	// KeepAlive: the proxy keeps a connection pool per upstream (true) or
	// opens a new upstream connection per request (false).
	KeepAlive *bool `yaml:"keep_alive" json:"keep_alive"`
	// RoutedN: the routed comparison routes the app's per-N route at
	// each of these serial call counts too, under every policy (empty:
	// only routes).
	RoutedN []int `yaml:"routed_n" json:"routed_n,omitempty"`
	// Serial sweep on both hosts directly.
	SweepN        []int `yaml:"sweep_n" json:"sweep_n"`
	SweepWarmup   int   `yaml:"sweep_warmup" json:"sweep_warmup"`
	SweepRequests int   `yaml:"sweep_requests" json:"sweep_requests"`
	// Concurrency: the routed comparison under open-loop Poisson arrivals
	// at these fractions of one host's measured capacity (empty: skipped).
	ConcurrencyRates    []float64 `yaml:"concurrency_rates" json:"concurrency_rates"`
	ConcurrencyRequests int       `yaml:"concurrency_requests" json:"concurrency_requests"`
	// Repeat runs calibration and comparison this many times with fresh
	// calibrations.
	Repeat int `yaml:"repeat" json:"repeat"`
	// Rounds interleaves the calibration and held-out measurements: each
	// round measures both phases (in a seeded order, the links switched
	// between them) with its share of requests and SELECT 1 calls, so a
	// drift of the host's speed during a repetition falls on both phases
	// and both hosts alike instead of showing up as model error.
	Rounds int `yaml:"rounds" json:"rounds"`
	// Calibrate: "off" (default) applies the one-way delays as
	// configured; "on" corrects each delayed link's one-way delays until
	// ICMP adds what is configured. With the floor the shaper applies
	// what it is given, so the correction mostly follows the ICMP
	// check's own noise (README, "How exact the delay is").
	Calibrate string `yaml:"calibrate" json:"calibrate"`
	Shaper    string `yaml:"shaper" json:"shaper"`
	Hook      string `yaml:"hook" json:"hook"`
	ICMPCount int    `yaml:"icmp_count" json:"icmp_count"`
	// CPUs limits a compute host (a, b) to this many CPUs (its
	// container's CPU quota, as docker run --cpus); a host not named is
	// not limited. placement-asym makes b the slower host this way.
	CPUs map[string]float64 `yaml:"cpus" json:"cpus,omitempty"`
	// Nodes pins study nodes (client, a, b, db) to cluster nodes by name
	// (runtime.MemberSpec.Node): on Kubernetes, the compute hosts and the
	// database on different real nodes. A study node not named runs where
	// the runtime puts it; Docker runs every node on its one host, and
	// rttlab place refuses a plan with nodes there.
	Nodes map[string]string `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	// FloorMs is added to every shaped packet's one-way delay on every
	// node, zero links included (netem.Config.Floor), so that the
	// userspace shaper's own pass does not absorb the links' sub-0.3 ms
	// differences. The phases' differences are unchanged by it; the
	// absolute latencies carry 2 x floor per round trip.
	FloorMs float64 `yaml:"floor_ms" json:"floor_ms"`

	file string
	doc  *planfile.Doc // the file's document, for the lines of errors
}

func boolPtr(b bool) *bool { return &b }

// Pools says whether the proxy keeps a pool of connections per upstream
// (keep_alive, default true); false: a new connection per request.
func (p *Plan) Pools() bool { return p.KeepAlive == nil || *p.KeepAlive }

// DefaultPlaceFloorMs is the built-in plans' floor: above the userspace
// shaper's pass on a busy 2-vCPU host (about 0.2 ms a packet, read lag
// p50 about 0.1 ms).
const DefaultPlaceFloorMs = shaping.DefaultFloorMs

// maxPlaceFloorMs bounds floor_ms: a floor is for the shaper's pass, not
// a delay.
const maxPlaceFloorMs = shaping.MaxFloorMs

// defaultPlan is the placement write-up's geometry: the client next
// to A, B nearer the database than A, and 0.25 ms one-way added on
// B→client for the held-out phase.
func defaultPlan() Plan {
	return Plan{
		Name: "placement", Seed: 1, App: "rails", Routes: []string{"/feed", "/feed-naive"},
		Links: []PlaceLink{
			{A: NodeA, B: NodeDB, RTTMs: 0.25},
			// SELECT 1 from b was 0.124 ms faster than from a in the
			// write-up's measurement.
			{A: NodeB, B: NodeDB, RTTMs: 0.125},
		},
		HeldOut: []PlaceOneWay{{From: NodeB, To: NodeClient, Ms: 0.25}},
		Warmup:  20, Requests: 500,
		Select1Warmup: 20, Select1Calls: 500,
		Policies:     []string{"user-first", "network-only", "profiled", "queue-aware"},
		RoutedWarmup: 15, RoutedRequests: 500, RoutedN: []int{1, 3, 12},
		KeepAlive: boolPtr(true),
		SweepN:    []int{0, 1, 2, 3, 6, 12, 24, 48}, SweepWarmup: 20, SweepRequests: 500,
		ConcurrencyRates: []float64{0.3, 0.7}, ConcurrencyRequests: 500,
		Repeat: 1, Rounds: 5, Calibrate: "off", Shaper: "userspace", ICMPCount: 200,
		FloorMs: DefaultPlaceFloorMs,
	}
}

// BuiltinPlan returns placement, placement-asym or placement-smoke.
func BuiltinPlan(name string) (*Plan, bool) {
	p := defaultPlan()
	switch name {
	case "placement":
	case "placement-asym":
		// b, near the database, on half a CPU: the network-only model
		// still sends the routes with many serial calls to b, where the
		// profiled one sees b's slower compute in its residual.
		p.Name = name
		p.CPUs = map[string]float64{NodeB: 0.5}
	case "placement-smoke":
		p.Name = name
		p.Warmup, p.Requests, p.Rounds = 5, 40, 2
		p.Select1Warmup, p.Select1Calls = 5, 60
		p.RoutedWarmup, p.RoutedRequests = 3, 30
		p.SweepN, p.SweepWarmup, p.SweepRequests = []int{0, 3, 12}, 3, 30
		p.ConcurrencyRequests = 60
		p.ICMPCount = 50
	default:
		return nil, false
	}
	p.file = "plan " + name
	return &p, true
}

// LoadPlan returns a built-in placement plan or reads a YAML file; a
// file starts from the placement plan's values.
func LoadPlan(nameOrFile string) (*Plan, error) {
	return planfile.Load(nameOrFile, "placement plan (placement, placement-asym, placement-smoke)", BuiltinPlan, ParsePlan)
}

// ParsePlan parses a YAML placement plan: fields left out keep the
// placement plan's values; errors name the file and line.
func ParsePlan(file string, data []byte) (*Plan, error) {
	p := defaultPlan()
	p.Name = ""
	doc, err := planfile.Parse(file, data, planfile.Keys(reflect.TypeFor[Plan]()))
	if err != nil {
		return nil, err
	}
	// Lists given replace the defaults rather than merging into them.
	if doc.Has("links") {
		p.Links = nil
	}
	if doc.Has("held_out") {
		p.HeldOut = nil
	}
	p.Routes, p.Policies, p.SweepN, p.ConcurrencyRates, p.RoutedN = nil, nil, nil, nil, nil
	def := defaultPlan()
	if err := doc.Decode(&p, planfile.Schema{}); err != nil {
		return nil, err
	}
	if p.Routes == nil {
		p.Routes = def.Routes
	}
	if p.Policies == nil {
		p.Policies = def.Policies
	}
	if p.SweepN == nil {
		p.SweepN = def.SweepN
	}
	if p.RoutedN == nil && !doc.Has("routed_n") {
		p.RoutedN = def.RoutedN
	}
	if p.ConcurrencyRates == nil {
		p.ConcurrencyRates = def.ConcurrencyRates
	}
	if p.Name == "" {
		p.Name = planfile.Name(file)
	}
	p.file, p.doc = file, doc
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// lineErr names the plan file and, when known, the line.
func (p *Plan) lineErr(line int, format string, a ...any) error {
	return planfile.ErrorAt(p.file, line, fmt.Sprintf(format, a...))
}

// errAt names the plan file and the line of the field at path (see
// planfile.Doc.Line), when the plan came from a file that has it.
func (p *Plan) errAt(path, format string, a ...any) error {
	return p.lineErr(p.doc.Line(path), format, a...)
}

// maxPlaceDelayMs bounds link delays (1 s, as for run's delays).
const maxPlaceDelayMs = 1000

func validDelay(ms float64) error {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return fmt.Errorf("%v ms is not a number", ms)
	case ms < 0:
		return fmt.Errorf("%v ms is negative", ms)
	case ms > maxPlaceDelayMs:
		return fmt.Errorf("%v ms exceeds 1 s", ms)
	}
	return nil
}

func knownNode(n string) bool { return slices.Contains(PlaceNodes, n) }

// Validate checks the plan without the apps' metadata; ValidateApp checks
// the app and its routes.
func (p *Plan) Validate() error {
	if p.file == "" {
		p.file = "plan " + p.Name
	}
	for _, check := range []func() error{p.validateLinks, p.validateHeldOut, p.validateCounts, p.validateLists, p.validateCPUs, p.validateNodes, p.validateShaping} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateLinks checks each link's nodes and RTT, and that no pair is
// listed twice.
func (p *Plan) validateLinks() error {
	seen := map[[2]string]bool{}
	for _, l := range p.Links {
		if err := p.validateEnds(seen, pairKey(l.A, l.B), l.line, fmt.Sprintf("link %s–%s", l.A, l.B), l.A, l.B, "rtt_ms", l.RTTMs); err != nil {
			return err
		}
	}
	return nil
}

// validateHeldOut checks each held-out delay's nodes and ms, and that no
// direction is listed twice.
func (p *Plan) validateHeldOut() error {
	seenOW := map[[2]string]bool{}
	for _, o := range p.HeldOut {
		if err := p.validateEnds(seenOW, [2]string{o.From, o.To}, o.line, fmt.Sprintf("held_out %s→%s", o.From, o.To), o.From, o.To, "ms", o.Ms); err != nil {
			return err
		}
	}
	return nil
}

// validateEnds checks one link or held-out delay, named what in the
// errors: its nodes a and b are known and differ, its delay ms (the
// field's value) is valid, and its key is not in seen yet; it adds the key
// to seen.
func (p *Plan) validateEnds(seen map[[2]string]bool, key [2]string, line int, what, a, b, field string, ms float64) error {
	for _, n := range []string{a, b} {
		if !knownNode(n) {
			return p.lineErr(line, "%s: unknown node %q (nodes: %s)", what, n, strings.Join(PlaceNodes, ", "))
		}
	}
	if a == b {
		return p.lineErr(line, "%s: a link to itself", what)
	}
	if err := validDelay(ms); err != nil {
		return p.lineErr(line, "%s: %s %v", what, field, err)
	}
	if seen[key] {
		return p.lineErr(line, "%s is listed twice", what)
	}
	seen[key] = true
	return nil
}

// validateCounts checks the request, call and warmup counts and the
// rounds they are split over.
func (p *Plan) validateCounts() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"requests", p.Requests}, {"select1_calls", p.Select1Calls}, {"routed_requests", p.RoutedRequests}, {"sweep_requests", p.SweepRequests}, {"repeat", p.Repeat}, {"icmp_count", p.ICMPCount}} {
		if f.v < 1 {
			return p.errAt(f.name, "%s %d: zero requests measure nothing; give at least 1", f.name, f.v)
		}
		if f.v > workloads.MaxRequests {
			return p.errAt(f.name, "%s %d exceeds %d", f.name, f.v, workloads.MaxRequests)
		}
	}
	if p.Rounds < 1 || p.Rounds > min(p.Requests, p.Select1Calls) {
		return p.errAt("rounds", "rounds %d: use 1 to %d (each round measures at least one request and one SELECT 1 per host)", p.Rounds, min(p.Requests, p.Select1Calls))
	}
	if len(p.ConcurrencyRates) > 0 && p.ConcurrencyRequests < 1 {
		return p.errAt("concurrency_requests", "concurrency_requests %d: zero requests measure nothing; give at least 1", p.ConcurrencyRequests)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"warmup", p.Warmup}, {"select1_warmup", p.Select1Warmup}, {"routed_warmup", p.RoutedWarmup}, {"sweep_warmup", p.SweepWarmup}} {
		if f.v < 0 || f.v > workloads.MaxRequests {
			return p.errAt(f.name, "%s %d: use 0..%d", f.name, f.v, workloads.MaxRequests)
		}
	}
	return nil
}

// validateLists checks the routes, policies, sweep Ns and concurrency
// rates.
func (p *Plan) validateLists() error {
	if len(p.Routes) == 0 {
		return p.errAt("routes", "routes is empty: name at least one route of the app")
	}
	for i, r := range p.Routes {
		if !strings.HasPrefix(r, "/") {
			return p.errAt(fmt.Sprintf("routes[%d]", i), "route %q must start with /", r)
		}
	}
	if len(p.Policies) == 0 {
		return p.errAt("policies", "policies is empty: use some of %s", strings.Join(policyNames(), ", "))
	}
	for i, s := range p.Policies {
		if _, err := ParsePolicy(s); err != nil {
			return p.errAt(fmt.Sprintf("policies[%d]", i), "policies: %v", err)
		}
	}
	for i, n := range p.SweepN {
		if n < 0 || n > MaxSerial {
			return p.errAt(fmt.Sprintf("sweep_n[%d]", i), "sweep_n %d: use 0..%d serial calls", n, MaxSerial)
		}
	}
	seen := map[int]bool{}
	for i, n := range p.RoutedN {
		if n < 1 || n > MaxSerial {
			return p.errAt(fmt.Sprintf("routed_n[%d]", i), "routed_n %d: use 1..%d serial calls", n, MaxSerial)
		}
		if seen[n] {
			return p.errAt(fmt.Sprintf("routed_n[%d]", i), "routed_n %d is listed twice", n)
		}
		seen[n] = true
	}
	for i, r := range p.ConcurrencyRates {
		if !(r > 0 && r <= 1) {
			return p.errAt(fmt.Sprintf("concurrency_rates[%d]", i), "concurrency_rates %v: use fractions of capacity in (0, 1]", r)
		}
	}
	return nil
}

// validateCPUs checks the compute hosts' CPU limits: a and b only, more
// than 0 and at most this host's CPU count.
func (p *Plan) validateCPUs() error {
	host := runtime.NumCPU()
	for _, n := range slices.Sorted(maps.Keys(p.CPUs)) {
		v := p.CPUs[n]
		switch {
		case n != NodeA && n != NodeB:
			return p.errAt("cpus."+n, "cpus: %q is not a compute host: limit a or b", n)
		case !(v >= 0.01):
			return p.errAt("cpus."+n, "cpus %s: %v: give a number of CPUs of at least 0.01 (the engine's smallest quota), such as 0.5", n, v)
		case v > float64(host):
			return p.errAt("cpus."+n, "cpus %s: %v is more than this host's %d CPUs", n, v, host)
		}
	}
	return nil
}

// nanoCPUs is node's CPU quota in billionths of a CPU; 0 without a limit.
func (p *Plan) nanoCPUs(node string) int64 {
	return int64(math.Round(p.CPUs[node] * 1e9))
}

// clusterNodeRE is what a cluster node's name pinned by its hostname
// label may be: a lowercase DNS name (Kubernetes' node names) short
// enough for a label value.
var clusterNodeRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$`)

// validateNodes checks the pinned nodes: study nodes only, each naming a
// cluster node.
func (p *Plan) validateNodes() error {
	for _, n := range slices.Sorted(maps.Keys(p.Nodes)) {
		v := p.Nodes[n]
		switch {
		case !knownNode(n):
			return p.errAt("nodes."+n, "nodes: %q is not a study node: pin %s", n, strings.Join(PlaceNodes, ", "))
		case v == "":
			return p.errAt("nodes."+n, "nodes %s: no cluster node named: give one of kubectl get nodes, or leave %s out", n, n)
		case !clusterNodeRE.MatchString(v) || strings.Contains(v, ".."):
			return p.errAt("nodes."+n, "nodes %s: %q cannot name a cluster node: give its name as kubectl get nodes shows it (lowercase letters, digits, '-' and '.', at most 63 characters)", n, v)
		}
	}
	return nil
}

// nodeOf is the cluster node node is pinned to; empty: the runtime's
// choice.
func (p *Plan) nodeOf(node string) string { return p.Nodes[node] }

// ClusterNodes are the distinct cluster nodes the plan pins study nodes
// to, sorted: what must be there before the study starts.
func (p *Plan) ClusterNodes() []string {
	var out []string
	for _, v := range p.Nodes {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// validateShaping checks the shaper, hook, calibrate and floor settings,
// and that no one-way delay plus the floor exceeds 1 s.
func (p *Plan) validateShaping() error {
	switch p.Shaper {
	case "auto", "kernel", "userspace":
	default:
		return p.errAt("shaper", "shaper %q: use auto, kernel or userspace", p.Shaper)
	}
	if err := shaping.ValidHook(p.Hook); err != nil {
		return p.errAt("hook", "%v", err)
	}
	switch p.Calibrate {
	case "on", "off":
	default:
		return p.errAt("calibrate", "calibrate %q: use on or off", p.Calibrate)
	}
	if !(p.FloorMs >= 0 && p.FloorMs <= maxPlaceFloorMs) {
		return p.errAt("floor_ms", "floor_ms %v: use 0 (none) to %v ms, above the shaper's pass (about 0.2 ms a packet)", p.FloorMs, maxPlaceFloorMs)
	}
	for pair, ms := range p.OneWayMs(true) {
		if ms+p.FloorMs > maxPlaceDelayMs {
			return p.errAt("floor_ms", "%s→%s: %v ms one-way plus floor_ms %v exceeds 1 s", pair[0], pair[1], ms, p.FloorMs)
		}
	}
	return nil
}

func policyNames() []string {
	out := make([]string, len(Policies))
	for i, p := range Policies {
		out[i] = string(p)
	}
	return out
}

// ValidateApp checks the app exists, has a route contract, serves the
// plan's routes, and has a per-N route for the sweep.
func (p *Plan) ValidateApp(all map[string]*apps.Meta) (apps.Target, error) {
	t, err := apps.Resolve(all, p.App)
	if err != nil {
		return apps.Target{}, p.errAt("app", "app: %v", err)
	}
	if len(t.Meta.Routes) == 0 {
		return t, p.errAt("app", "app %s has no route contract (statements per route): the placement study needs one", p.App)
	}
	for i, r := range p.Routes {
		if _, ok := routeMeta(t.Meta, r); !ok {
			return t, p.errAt(fmt.Sprintf("routes[%d]", i), "route %s: unknown to app %s (its routes: %s)", r, p.App, strings.Join(routePaths(t.Meta), ", "))
		}
	}
	if _, ok := perNRoute(t.Meta); !ok {
		if len(p.SweepN) > 0 {
			return t, p.errAt("sweep_n", "app %s has no per-N route (statements_per_n) for sweep_n: give sweep_n: []", p.App)
		}
		if len(p.RoutedN) > 0 {
			return t, p.errAt("routed_n", "app %s has no per-N route (statements_per_n) for routed_n: give routed_n: []", p.App)
		}
	}
	return t, nil
}

func routeMeta(m *apps.Meta, path string) (apps.Route, bool) {
	for _, r := range m.Routes {
		if r.Path == path {
			return r, true
		}
	}
	return apps.Route{}, false
}

func perNRoute(m *apps.Meta) (apps.Route, bool) {
	for _, r := range m.Routes {
		if r.StatementsPerN {
			return r, true
		}
	}
	return apps.Route{}, false
}

func routePaths(m *apps.Meta) []string {
	var out []string
	for _, r := range m.Routes {
		out = append(out, r.Path)
	}
	return out
}

func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// OneWayMs returns the delay of every directed pair of nodes: half of the
// link's RTT, plus the held-out extra when heldOut.
func (p *Plan) OneWayMs(heldOut bool) map[[2]string]float64 {
	out := map[[2]string]float64{}
	for _, l := range p.Links {
		out[[2]string{l.A, l.B}] += l.RTTMs / 2
		out[[2]string{l.B, l.A}] += l.RTTMs / 2
	}
	if heldOut {
		for _, o := range p.HeldOut {
			out[[2]string{o.From, o.To}] += o.Ms
		}
	}
	return out
}

// LinkRTTMs is the configured added RTT between two nodes (0 when not
// listed), without the held-out extra.
func (p *Plan) LinkRTTMs(a, b string) float64 {
	for _, l := range p.Links {
		if pairKey(l.A, l.B) == pairKey(a, b) {
			return l.RTTMs
		}
	}
	return 0
}
