package workers

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/workloads"
)

// WorkPath is the app route of the study: it burns cpu_ms of Ruby CPU
// (holding the GVL) and runs queries serial SELECTs (releasing it while it
// waits for each).
const WorkPath = "/work"

// Plan bounds.
const (
	MaxCPUMs   = 1000
	MaxQueries = 1000
	MaxRuns    = 1000
	MaxRTTMs   = 1000
)

// Mix is one request type of the study: every request of a cell is
// WorkPath with these parameters.
type Mix struct {
	Name    string  `yaml:"name" json:"name"`
	CPUMs   float64 `yaml:"cpu_ms" json:"cpu_ms"`
	Queries int     `yaml:"queries" json:"queries"`
}

// Path is the request path, e.g. "/work?cpu_ms=5&queries=1".
func (m Mix) Path() string {
	return fmt.Sprintf("%s?cpu_ms=%s&queries=%d", WorkPath, strconv.FormatFloat(m.CPUMs, 'f', -1, 64), m.Queries)
}

// The seed's two request types.
var (
	MixCPUHeavy = Mix{Name: "cpu-heavy", CPUMs: 5, Queries: 1}
	MixIOHeavy  = Mix{Name: "io-heavy", CPUMs: 1, Queries: 10}
)

// CapacitySpec configures the capacity search of each configuration
// (workloads.SearchCapacity): short open-loop trials, doubling from
// StartRate until one is not sustained, then bisecting.
type CapacitySpec struct {
	StartRate     float64 `yaml:"start_rate" json:"start_rate"`
	MaxRate       float64 `yaml:"max_rate" json:"max_rate"`
	MaxTrials     int     `yaml:"max_trials" json:"max_trials"`
	Precision     float64 `yaml:"precision" json:"precision"`
	TrialRequests int     `yaml:"trial_requests" json:"trial_requests"`
	TrialWarmup   int     `yaml:"trial_warmup" json:"trial_warmup"`
	// A trial is sustained when its p99 latency (from the scheduled
	// send) is at most MaxP99Ms, its throughput at least MinThroughput
	// of the offered rate and at most MaxFailures of it failed.
	MaxP99Ms      float64 `yaml:"max_p99_ms" json:"max_p99_ms"`
	MinThroughput float64 `yaml:"min_throughput" json:"min_throughput"`
	MaxFailures   float64 `yaml:"max_failures" json:"max_failures"`
	// EveryPolicy searches every policy's capacity (reported per
	// configuration), not only the baseline's that the loads are
	// fractions of (load_basis baseline).
	EveryPolicy bool `yaml:"every_policy" json:"every_policy"`
}

// Options returns the workloads capacity options of the spec.
func (c CapacitySpec) Options() workloads.CapacityOptions {
	mf := c.MaxFailures
	if mf == 0 {
		mf = -1 // workloads reads 0 as its default and negative as none
	}
	return workloads.CapacityOptions{
		CapacityCriteria: workloads.CapacityCriteria{
			MinThroughput: c.MinThroughput,
			MaxFailures:   mf,
			MaxLatencyP99: time.Duration(c.MaxP99Ms * float64(time.Millisecond)),
		},
		StartRate: c.StartRate,
		MaxRate:   c.MaxRate,
		MaxTrials: c.MaxTrials,
		Precision: c.Precision,
	}
}

// Load bases.
const (
	// LoadBasisBaseline runs every policy of a (configuration, mix, RTT)
	// at the same arrival rates: the plan's fractions of the baseline
	// policy's capacity. Policies are then compared under the same
	// offered load, which is what a latency comparison needs.
	LoadBasisBaseline = "baseline"
	// LoadBasisOwn runs each policy at fractions of its own capacity.
	LoadBasisOwn = "own"
)

// Plan is a worker-scheduling study (rttlab workers). The YAML form; every
// field is optional and takes the workers plan's value when left out, and
// a list given replaces the default list:
//
//	name: my-workers
//	seed: 1
//	policies: [puma:wflbw=0, puma:wflbw=0.001, puma:wflbw=default, puma:wflbw=0.05,
//	           proxy:jsq, proxy:round-robin, proxy:p2c]
//	baseline: puma:wflbw=0      # every change is against it
//	reference: proxy:jsq        # the ideal of the penalty statement
//	configs: [2x1, 2x2, 2x4]    # workers x threads
//	mixes:
//	  - {name: cpu-heavy, cpu_ms: 5, queries: 1}
//	  - {name: io-heavy, cpu_ms: 1, queries: 10}
//	db_rtt_ms: [0, 1]           # added app<->database RTT
//	load_fractions: [0.1, 0.3, 0.5, 0.7, 0.9]
//	load_basis: baseline        # baseline | own
//	runs: 6                     # runs per cell
//	requests: 600               # measured requests per run
//	warmup: 60                  # warmup requests per run
//	timeout_ms: 10000           # per request
//	client_keep_alive: false    # false: a new connection per request
//	shaper: userspace           # auto | kernel | userspace
//	capacity:
//	  start_rate: 20
//	  max_rate: 5000
//	  max_trials: 10
//	  precision: 0.05
//	  trial_requests: 600
//	  trial_warmup: 60
//	  max_p99_ms: 250
//	  min_throughput: 0.95
//	  max_failures: 0.01
//	  every_policy: true
//
// The client opens a new connection per request by default because in
// cluster mode a kept-alive connection stays with the worker that
// accepted it: the accept race would then place connections, not
// requests, and the policies under study would hardly act.
type Plan struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
	// Platform the database and Rails run (engine.Platforms); empty: the
	// engine's own. rttlab's agents run the engine's own.
	Platform string `json:"platform,omitempty"`
	// Emulated records that Platform ran under emulation (not the
	// engine's own): a folder is resumed only the same way.
	Emulated  bool     `json:"emulated,omitempty"`
	Policies  []Policy `json:"policies"`
	Baseline  Policy   `json:"baseline"`
	Reference Policy   `json:"reference"`
	Layouts   []Layout `json:"configs"`
	Mixes     []Mix    `json:"mixes"`
	// DBRTTMs are the added app<->database RTTs in milliseconds.
	DBRTTMs         []float64    `json:"db_rtt_ms"`
	LoadFractions   []float64    `json:"load_fractions"`
	LoadBasis       string       `json:"load_basis"`
	Runs            int          `json:"runs"`
	Requests        int          `json:"requests"`
	Warmup          int          `json:"warmup"`
	TimeoutMs       int          `json:"timeout_ms"`
	ClientKeepAlive bool         `json:"client_keep_alive"`
	Shaper          string       `json:"shaper"`
	Capacity        CapacitySpec `json:"capacity"`

	file string
	doc  *planfile.Doc
}

// rawPlan is the YAML form before the policies and configurations are
// parsed.
type rawPlan struct {
	Name            string       `yaml:"name"`
	Seed            uint64       `yaml:"seed"`
	Policies        []string     `yaml:"policies"`
	Baseline        string       `yaml:"baseline"`
	Reference       string       `yaml:"reference"`
	Configs         []string     `yaml:"configs"`
	Mixes           []Mix        `yaml:"mixes"`
	DBRTTMs         []float64    `yaml:"db_rtt_ms"`
	LoadFractions   []float64    `yaml:"load_fractions"`
	LoadBasis       string       `yaml:"load_basis"`
	Runs            int          `yaml:"runs"`
	Requests        int          `yaml:"requests"`
	Warmup          int          `yaml:"warmup"`
	TimeoutMs       int          `yaml:"timeout_ms"`
	ClientKeepAlive bool         `yaml:"client_keep_alive"`
	Shaper          string       `yaml:"shaper"`
	Capacity        CapacitySpec `yaml:"capacity"`
}

func defaultRaw() rawPlan {
	return rawPlan{
		Name: "workers", Seed: 1,
		Policies:      []string{"puma:wflbw=0", "puma:wflbw=0.001", "puma:wflbw=default", "puma:wflbw=0.05", "proxy:jsq", "proxy:round-robin", "proxy:p2c"},
		Baseline:      AcceptRace.String(),
		Reference:     ProxyJSQ.String(),
		Configs:       []string{"2x1", "2x2", "2x4"},
		Mixes:         []Mix{MixCPUHeavy, MixIOHeavy},
		DBRTTMs:       []float64{0, 1},
		LoadFractions: []float64{0.1, 0.3, 0.5, 0.7, 0.9},
		LoadBasis:     LoadBasisBaseline,
		Runs:          6, Requests: 600, Warmup: 60, TimeoutMs: 10000,
		Shaper: "userspace",
		Capacity: CapacitySpec{
			StartRate: 20, MaxRate: 5000, MaxTrials: 10, Precision: 0.05,
			TrialRequests: 600, TrialWarmup: 60, MaxP99Ms: 250,
			MinThroughput: 0.95, MaxFailures: 0.01, EveryPolicy: true,
		},
	}
}

// Built-in plan names.
const (
	PlanWorkers      = "workers"
	PlanWorkersSmoke = "workers-smoke"
)

// BuiltinPlan returns the workers plan (the full study: six
// policies, three configurations, two mixes, two RTTs, five loads, six
// runs) or workers-smoke (the accept race, Puma's default and the JSQ
// proxy on 2x2, both mixes at 0 ms, loads 0.3 and 0.9, two runs of 150
// requests: a few minutes, for CI).
func BuiltinPlan(name string, lim Limits) (*Plan, bool) {
	raw := defaultRaw()
	switch name {
	case PlanWorkers:
	case PlanWorkersSmoke:
		raw.Name = name
		raw.Policies = []string{"puma:wflbw=0", "puma:wflbw=default", "proxy:jsq"}
		raw.Configs = []string{"2x2"}
		raw.DBRTTMs = []float64{0}
		raw.LoadFractions = []float64{0.3, 0.9}
		raw.Runs, raw.Requests, raw.Warmup = 2, 150, 20
		raw.Capacity.MaxTrials, raw.Capacity.TrialRequests, raw.Capacity.TrialWarmup = 5, 200, 20
		raw.Capacity.EveryPolicy = false
	default:
		return nil, false
	}
	p, err := build(raw, "plan "+name, nil, lim)
	if err != nil {
		panic(fmt.Sprintf("built-in plan %s: %v", name, err))
	}
	return p, true
}

// LoadPlan returns a built-in plan or reads a YAML plan file.
func LoadPlan(nameOrFile string, lim Limits) (*Plan, error) {
	return planfile.Load(nameOrFile, fmt.Sprintf("workers plan (%s, %s)", PlanWorkers, PlanWorkersSmoke),
		func(name string) (*Plan, bool) { return BuiltinPlan(name, lim) },
		func(file string, data []byte) (*Plan, error) { return ParsePlan(file, data, lim) })
}

// planSchema places a workers plan's unknown fields.
var planSchema = planfile.Schema{Where: map[string]string{"CapacitySpec": "in capacity", "Mix": "in a mix"}}

// ParsePlan parses a YAML plan and validates it against lim; every error
// is one line naming the file and, where it is known, the line.
func ParsePlan(file string, data []byte, lim Limits) (*Plan, error) {
	doc, err := planfile.Parse(file, data, planfile.Keys(reflect.TypeFor[rawPlan]()))
	if err != nil {
		return nil, err
	}
	raw := defaultRaw()
	raw.Name = ""
	if err := doc.Decode(&raw, planSchema); err != nil {
		return nil, err
	}
	if raw.Name == "" {
		raw.Name = planfile.Name(file)
	}
	return build(raw, file, doc, lim)
}

// build turns the raw form into a validated Plan.
func build(raw rawPlan, file string, doc *planfile.Doc, lim Limits) (*Plan, error) {
	p := &Plan{
		Name: raw.Name, Seed: raw.Seed, Mixes: raw.Mixes, DBRTTMs: raw.DBRTTMs,
		LoadFractions: raw.LoadFractions, LoadBasis: raw.LoadBasis, Runs: raw.Runs,
		Requests: raw.Requests, Warmup: raw.Warmup, TimeoutMs: raw.TimeoutMs,
		ClientKeepAlive: raw.ClientKeepAlive, Shaper: raw.Shaper, Capacity: raw.Capacity,
		file: file, doc: doc,
	}
	if len(raw.Policies) == 0 {
		return nil, p.errAt("policies", "policies is empty: give at least the baseline %s", AcceptRace)
	}
	for i, s := range raw.Policies {
		pol, err := ParsePolicy(s)
		key := fmt.Sprintf("policies[%d]", i)
		if err != nil {
			return nil, p.errAt(key, "policies: %v", err)
		}
		for _, q := range p.Policies {
			if q.sameAs(pol) {
				return nil, p.errAt(key, "policies: %s is listed twice (as %s)", pol, q)
			}
		}
		p.Policies = append(p.Policies, pol)
	}
	var err error
	if p.Baseline, err = ParsePolicy(raw.Baseline); err != nil {
		return nil, p.errAt("baseline", "baseline: %v", err)
	}
	if p.Reference, err = ParsePolicy(raw.Reference); err != nil {
		return nil, p.errAt("reference", "reference: %v", err)
	}
	if !slices.Contains(p.Policies, p.Baseline) {
		key := "baseline"
		if !p.doc.Has(key) {
			key = "policies"
		}
		return nil, p.errAt(key, "baseline %s is not among the policies: every change is against it; add it or name another", p.Baseline)
	}
	if len(raw.Configs) == 0 {
		return nil, p.errAt("configs", "configs is empty: give at least one WORKERSxTHREADS, e.g. 2x2")
	}
	for i, s := range raw.Configs {
		key := fmt.Sprintf("configs[%d]", i)
		l, err := ParseLayout(s)
		if err != nil {
			return nil, p.errAt(key, "configs: %v", err)
		}
		if err := lim.Check(l); err != nil {
			return nil, p.errAt(key, "configs: %v", err)
		}
		if slices.Contains(p.Layouts, l) {
			return nil, p.errAt(key, "configs: %s is listed twice", l)
		}
		p.Layouts = append(p.Layouts, l)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// File is the plan's file, or "plan NAME" for a built-in plan.
func (p *Plan) File() string { return p.file }

// errAt returns "FILE:LINE: message" for the field key (the line of its
// parent when the key itself is not in the file), "FILE: message" without
// a line.
func (p *Plan) errAt(key string, format string, a ...any) error {
	return planfile.ErrorAt(p.file, p.doc.Line(key), fmt.Sprintf(format, a...))
}

var mixNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (p *Plan) validate() error {
	if p.Name == "" {
		return p.errAt("name", "name is empty")
	}
	for _, check := range []func() error{p.validateMixes, p.validateRTTs, p.validateLoads, p.validateCounts} {
		if err := check(); err != nil {
			return err
		}
	}
	switch p.Shaper {
	case "auto", "kernel", "userspace":
	default:
		return p.errAt("shaper", "shaper %q: use auto, kernel or userspace", p.Shaper)
	}
	return p.validateCapacity()
}

// validateMixes checks that there is a mix and that each has a valid,
// unique name and CPU time and queries in range.
func (p *Plan) validateMixes() error {
	if len(p.Mixes) == 0 {
		return p.errAt("mixes", "mixes is empty: give at least one {name, cpu_ms, queries}")
	}
	names := map[string]bool{}
	for i, m := range p.Mixes {
		key := fmt.Sprintf("mixes[%d]", i)
		switch {
		case !mixNameRE.MatchString(m.Name):
			return p.errAt(key+".name", "mix name %q: use lower-case letters, digits, - and _", m.Name)
		case names[m.Name]:
			return p.errAt(key+".name", "mix %s is listed twice", m.Name)
		case !finite(m.CPUMs) || m.CPUMs < 0:
			return p.errAt(key+".cpu_ms", "mix %s: cpu_ms %v is negative or not a number", m.Name, m.CPUMs)
		case m.CPUMs > MaxCPUMs:
			return p.errAt(key+".cpu_ms", "mix %s: cpu_ms %v exceeds %d", m.Name, m.CPUMs, MaxCPUMs)
		case m.Queries < 0:
			return p.errAt(key+".queries", "mix %s: queries %d is negative", m.Name, m.Queries)
		case m.Queries > MaxQueries:
			return p.errAt(key+".queries", "mix %s: queries %d exceeds %d", m.Name, m.Queries, MaxQueries)
		}
		names[m.Name] = true
	}
	return nil
}

// validateRTTs checks that there is an RTT and that each is in range and
// listed once.
func (p *Plan) validateRTTs() error {
	if len(p.DBRTTMs) == 0 {
		return p.errAt("db_rtt_ms", "db_rtt_ms is empty: give at least 0")
	}
	for i, v := range p.DBRTTMs {
		key := fmt.Sprintf("db_rtt_ms[%d]", i)
		switch {
		case !finite(v) || v < 0 || v > MaxRTTMs:
			return p.errAt(key, "db_rtt_ms %v: use 0..%d ms", v, MaxRTTMs)
		case slices.Contains(p.DBRTTMs[:i], v):
			return p.errAt(key, "db_rtt_ms %v is listed twice", v)
		}
	}
	return nil
}

// validateLoads checks the load fractions (each in (0, 1] and listed
// once) and the load basis.
func (p *Plan) validateLoads() error {
	if len(p.LoadFractions) == 0 {
		return p.errAt("load_fractions", "load_fractions is empty: give fractions of capacity in (0, 1]")
	}
	for i, v := range p.LoadFractions {
		key := fmt.Sprintf("load_fractions[%d]", i)
		switch {
		case !finite(v) || v <= 0 || v > 1:
			return p.errAt(key, "load fraction %v outside (0, 1]: loads are fractions of the measured capacity", v)
		case slices.Contains(p.LoadFractions[:i], v):
			return p.errAt(key, "load fraction %v is listed twice", v)
		}
	}
	switch p.LoadBasis {
	case LoadBasisBaseline, LoadBasisOwn:
	default:
		return p.errAt("load_basis", "load_basis %q: use %s or %s", p.LoadBasis, LoadBasisBaseline, LoadBasisOwn)
	}
	return nil
}

// validateCounts checks the runs, requests, warmup and timeout ranges.
func (p *Plan) validateCounts() error {
	for _, f := range []struct {
		key    string
		v, max int
	}{{"runs", p.Runs, MaxRuns}, {"requests", p.Requests, workloads.MaxRequests}} {
		if f.v < 1 {
			return p.errAt(f.key, "%s %d: zero measures nothing; give at least 1", f.key, f.v)
		}
		if f.v > f.max {
			return p.errAt(f.key, "%s %d exceeds %d", f.key, f.v, f.max)
		}
	}
	if p.Warmup < 0 || p.Warmup > workloads.MaxRequests {
		return p.errAt("warmup", "warmup %d: use 0..%d", p.Warmup, workloads.MaxRequests)
	}
	if p.TimeoutMs < 1 || p.TimeoutMs > 600_000 {
		return p.errAt("timeout_ms", "timeout_ms %d: use 1..600000", p.TimeoutMs)
	}
	return nil
}

func (p *Plan) validateCapacity() error {
	c := p.Capacity
	k := func(s string) string { return "capacity." + s }
	switch {
	case !finite(c.StartRate) || c.StartRate <= 0:
		return p.errAt(k("start_rate"), "capacity start_rate %v must be a positive rate", c.StartRate)
	case !finite(c.MaxRate) || c.MaxRate < 0:
		return p.errAt(k("max_rate"), "capacity max_rate %v must not be negative (0: no cap)", c.MaxRate)
	case c.MaxRate > 0 && c.MaxRate < c.StartRate:
		return p.errAt(k("max_rate"), "capacity max_rate %v is below start_rate %v", c.MaxRate, c.StartRate)
	case c.MaxTrials < 1 || c.MaxTrials > 100:
		return p.errAt(k("max_trials"), "capacity max_trials %d: use 1..100", c.MaxTrials)
	case !finite(c.Precision) || c.Precision <= 0 || c.Precision >= 1:
		return p.errAt(k("precision"), "capacity precision %v: use a fraction in (0, 1)", c.Precision)
	case c.TrialRequests < 1 || c.TrialRequests > workloads.MaxRequests:
		return p.errAt(k("trial_requests"), "capacity trial_requests %d: use 1..%d", c.TrialRequests, workloads.MaxRequests)
	case c.TrialWarmup < 0 || c.TrialWarmup > workloads.MaxRequests:
		return p.errAt(k("trial_warmup"), "capacity trial_warmup %d: use 0..%d", c.TrialWarmup, workloads.MaxRequests)
	case !finite(c.MaxP99Ms) || c.MaxP99Ms <= 0:
		return p.errAt(k("max_p99_ms"), "capacity max_p99_ms %v must be positive", c.MaxP99Ms)
	case !finite(c.MinThroughput) || c.MinThroughput <= 0 || c.MinThroughput > 1:
		return p.errAt(k("min_throughput"), "capacity min_throughput %v: use a fraction in (0, 1]", c.MinThroughput)
	case !finite(c.MaxFailures) || c.MaxFailures < 0 || c.MaxFailures > 1:
		return p.errAt(k("max_failures"), "capacity max_failures %v: use a fraction in [0, 1]", c.MaxFailures)
	}
	return nil
}

// Mix returns the plan's mix of that name.
func (p *Plan) Mix(name string) (Mix, bool) {
	for _, m := range p.Mixes {
		if m.Name == name {
			return m, true
		}
	}
	return Mix{}, false
}

// CellKey names one cell of the study: a policy on a configuration, with
// a mix, an RTT and a load fraction. Its runs are the cell's samples.
type CellKey struct {
	Policy   string  `json:"policy"`
	Layout   string  `json:"config"`
	Mix      string  `json:"mix"`
	RTTMs    float64 `json:"rtt_ms"`
	Fraction float64 `json:"fraction"`
}

// String writes the key as "policy 2x2 cpu-heavy 0ms 50%".
func (k CellKey) String() string {
	return fmt.Sprintf("%s %s %s %sms %s", k.Policy, k.Layout, k.Mix, fmtNum(k.RTTMs), fmtPct(k.Fraction))
}

// group is the key without the policy: the cells a comparison pairs.
func (k CellKey) group() CellKey { k.Policy = ""; return k }

// Task is one run of one cell.
type Task struct {
	// ID numbers the tasks in execution order from 1.
	ID int `json:"id"`
	// Round is the run number: round r runs every cell's r-th run, so a
	// drift over the study's hours spreads over every cell alike.
	Round int `json:"round"`
	// Stack is what must be running: the configuration and the policy's
	// Stack ("2x2 puma:wflbw=0", "2x2 proxy").
	Stack  string `json:"stack"`
	Policy Policy `json:"policy"`
	Layout Layout `json:"config"`
	Mix    Mix    `json:"mix"`
	// RTTMs is the added app<->database RTT.
	RTTMs    float64 `json:"rtt_ms"`
	Fraction float64 `json:"fraction"`
	Run      int     `json:"run"`
	// Seed seeds the run's arrival schedule. It depends on the
	// configuration, mix, RTT, load and run but not the policy, so every
	// policy of a comparison meets the same arrivals (common random
	// numbers).
	Seed uint64 `json:"seed"`
}

// Cell returns the task's cell.
func (t Task) Cell() CellKey {
	return CellKey{Policy: t.Policy.String(), Layout: t.Layout.String(), Mix: t.Mix.Name, RTTMs: t.RTTMs, Fraction: t.Fraction}
}

func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func (p *Plan) stacks() []string {
	var out []string
	for _, l := range p.Layouts {
		for _, pol := range p.Policies {
			s := l.String() + " " + pol.Stack()
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// Tasks expands the plan into its runs in execution order. The study
// runs in rounds, one per run number; within a round every stack (a
// configuration with a Puma cluster setting, or with the proxy and its W
// single-mode processes) is visited once, the stacks in an order shuffled
// per round, and within a visit the stack's (policy, mix, RTT, load)
// cells in an order shuffled per round and stack. Every shuffle is
// seeded by the plan's seed and its own key, so the order is the same on
// every machine, and a stack is started Runs times rather than once, in
// exchange for an order in which a slow drift cannot favour a policy.
func (p *Plan) Tasks() []Task {
	var out []Task
	for round := 1; round <= p.Runs; round++ {
		stacks := p.stacks()
		rng := rand.New(rand.NewPCG(p.Seed, hash64("workers-stacks", strconv.Itoa(round))))
		rng.Shuffle(len(stacks), func(i, j int) { stacks[i], stacks[j] = stacks[j], stacks[i] })
		for _, st := range stacks {
			var ts []Task
			for _, l := range p.Layouts {
				for _, pol := range p.Policies {
					if l.String()+" "+pol.Stack() != st {
						continue
					}
					for _, m := range p.Mixes {
						for _, rtt := range p.DBRTTMs {
							for _, f := range p.LoadFractions {
								ts = append(ts, Task{Round: round, Stack: st, Policy: pol, Layout: l, Mix: m,
									RTTMs: rtt, Fraction: f, Run: round,
									Seed: hash64("workers-arrivals", strconv.FormatUint(p.Seed, 10), l.String(), m.Name, fmtNum(rtt), fmtNum(f), strconv.Itoa(round))})
							}
						}
					}
				}
			}
			r := rand.New(rand.NewPCG(p.Seed, hash64("workers-cells", strconv.Itoa(round), st)))
			r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
			out = append(out, ts...)
		}
	}
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

// CapacityKey names one capacity search.
type CapacityKey struct {
	Policy string  `json:"policy"`
	Layout string  `json:"config"`
	Mix    string  `json:"mix"`
	RTTMs  float64 `json:"rtt_ms"`
}

// CapacityTarget is one capacity search to run before the load tasks.
type CapacityTarget struct {
	Key    CapacityKey `json:"key"`
	Stack  string      `json:"stack"`
	Policy Policy      `json:"policy"`
	Layout Layout      `json:"config"`
	Mix    Mix         `json:"mix"`
	RTTMs  float64     `json:"rtt_ms"`
	// Seed seeds the trials' schedules (each trial may add its rate).
	Seed uint64 `json:"seed"`
}

// needsCapacity reports whether the policy's capacity is searched: the
// baseline's always (with load basis baseline the loads are its
// fractions), every policy's with load basis own or every_policy.
func (p *Plan) needsCapacity(pol Policy) bool {
	return pol == p.Baseline || p.LoadBasis == LoadBasisOwn || p.Capacity.EveryPolicy
}

// CapacityTargets lists the capacity searches grouped by stack, the
// stacks and the searches within each in orders shuffled by the seed.
func (p *Plan) CapacityTargets() []CapacityTarget {
	stacks := p.stacks()
	rng := rand.New(rand.NewPCG(p.Seed, hash64("workers-capacity-stacks")))
	rng.Shuffle(len(stacks), func(i, j int) { stacks[i], stacks[j] = stacks[j], stacks[i] })
	var out []CapacityTarget
	for _, st := range stacks {
		var ts []CapacityTarget
		for _, l := range p.Layouts {
			for _, pol := range p.Policies {
				if l.String()+" "+pol.Stack() != st || !p.needsCapacity(pol) {
					continue
				}
				for _, m := range p.Mixes {
					for _, rtt := range p.DBRTTMs {
						k := CapacityKey{Policy: pol.String(), Layout: l.String(), Mix: m.Name, RTTMs: rtt}
						ts = append(ts, CapacityTarget{Key: k, Stack: st, Policy: pol, Layout: l, Mix: m, RTTMs: rtt,
							Seed: hash64("workers-capacity", strconv.FormatUint(p.Seed, 10), k.Policy, k.Layout, k.Mix, fmtNum(rtt))})
					}
				}
			}
		}
		r := rand.New(rand.NewPCG(p.Seed, hash64("workers-capacity-cells", st)))
		r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		out = append(out, ts...)
	}
	return out
}

// CapacityKeyFor is the search whose capacity sets the task's rate: the
// baseline's on the task's configuration, mix and RTT (load basis
// baseline) or the task's own policy's (own).
func (p *Plan) CapacityKeyFor(t Task) CapacityKey {
	pol := p.Baseline
	if p.LoadBasis == LoadBasisOwn {
		pol = t.Policy
	}
	return CapacityKey{Policy: pol.String(), Layout: t.Layout.String(), Mix: t.Mix.Name, RTTMs: t.RTTMs}
}

// Rate is the task's arrival rate: its load fraction of the capacity
// CapacityKeyFor names.
func (p *Plan) Rate(t Task, capacities map[CapacityKey]float64) (float64, error) {
	k := p.CapacityKeyFor(t)
	c, ok := capacities[k]
	if !ok {
		return 0, fmt.Errorf("task %d (%s): no capacity measured for %s %s %s %sms", t.ID, t.Cell(), k.Policy, k.Layout, k.Mix, fmtNum(k.RTTMs))
	}
	if !(c > 0) || !finite(c) {
		return 0, fmt.Errorf("task %d (%s): capacity %v of %s %s %s %sms is not a positive rate", t.ID, t.Cell(), c, k.Policy, k.Layout, k.Mix, fmtNum(k.RTTMs))
	}
	return t.Fraction * c, nil
}

// OpenLoopOptions returns the open-loop options of the task's run against
// baseURL (the cluster's or the proxy's origin) at rate: the mix's path
// for every request, the proxy rule in HeaderPolicy for proxy policies,
// the worker headers copied into the results, a new connection per
// request unless the plan keeps them alive.
func (p *Plan) OpenLoopOptions(t Task, baseURL string, rate float64) workloads.OpenLoopOptions {
	o := workloads.OpenLoopOptions{
		BaseURL:           baseURL,
		Requests:          []workloads.OpenRequest{{Path: t.Mix.Path(), Tags: map[string]string{"policy": t.Policy.String(), "mix": t.Mix.Name}}},
		Rate:              rate,
		Count:             p.Warmup + p.Requests,
		Warmup:            p.Warmup,
		Seed:              t.Seed,
		Timeout:           time.Duration(p.TimeoutMs) * time.Millisecond,
		CopyHeaders:       WorkerHeaders(),
		NewConnPerRequest: !p.ClientKeepAlive,
	}
	if t.Policy.Kind == KindProxy {
		o.Header = map[string]string{HeaderPolicy: string(t.Policy.Rule)}
	}
	return o
}

// LoadTime estimates the time the plan's load tasks send requests:
// (warmup + requests) / rate summed over the tasks, with the rates from
// capacities, or from fallback (requests per second) for a capacity not
// in the map. Capacity searches and stack starts come on top.
func (p *Plan) LoadTime(capacities map[CapacityKey]float64, fallback float64) time.Duration {
	var secs float64
	for _, t := range p.Tasks() {
		c, ok := capacities[p.CapacityKeyFor(t)]
		if !ok || !(c > 0) {
			c = fallback
		}
		if c > 0 {
			secs += float64(p.Warmup+p.Requests) / (t.Fraction * c)
		}
	}
	return time.Duration(secs * float64(time.Second))
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtPct(f float64) string { return fmtNum(math.Round(f*1e6)/1e4) + "%" }
