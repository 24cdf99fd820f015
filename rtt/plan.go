package rtt

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// Plan says which apps and routes run, at which RTT settings, how many
// runs of how many requests, and the seed of every random choice.
//
// The YAML form (all fields optional except where noted; runs, requests
// and warmup default to the study's 20, 100 and 20):
//
//	name: my-plan
//	seed: 20260926
//	delays_ms: [0, 0.25, 0.5, 1]   # RTT settings in milliseconds (required)
//	runs: 20                       # runs per (app, route, setting)
//	requests: 100                  # measured requests per run
//	warmup: 20                     # warmup requests per run
//	shaper: auto                   # auto | kernel | userspace
//	scope: path                    # path | interface
//	apps:                          # required
//	  - name: go
//	    routes: [/feed, /feed-naive]
//	    budgets:                     # round-trip budgets, gated on the run's trace
//	      /feed: 3                   # (per request type; app.yaml's budgets apply
//	      /feed-naive: 12            #  too, these win for the same type)
//	  - name: redmine
//	    mix: redmine                 # a weighted request mix instead of routes
//	    runs: 10                     # per-app overrides of runs/requests/warmup
//	  - name: shop                   # a user's own app: an image, never built
//	    image: example/shop:1.4
//	    routes: [/api/items, /api/items/1]
//	    port: 3000                   # default 8080
//	    health: /healthz             # default /
//	    db_init: [schema.sql, seed/] # SQL files, folders of .sql, pg_dump files
//	    env: {LOG_LEVEL: warn}       # added to PG* and DATABASE_URL
//	    env_file: shop.env
//	    statements: {/api/items: 1}  # declared counts are asserted by verify
//	  - name: shop-mix               # an own app driven by a weighted mix
//	    image: example/shop:1.4      # of its own requests instead of routes
//	    request_mix:                 # (each name is a request type)
//	      - {name: list, path: /api/items, weight: 6}
//	      - name: create
//	        method: POST             # GET (default), POST, PUT, PATCH, DELETE, HEAD
//	        path: /api/items
//	        headers: {Content-Type: application/json}
//	        body: '{"name": "widget"}'
//	        weight: 1
type Plan struct {
	Name     string    `yaml:"name" json:"name"`
	Seed     uint64    `yaml:"seed" json:"seed"`
	DelaysMs []float64 `yaml:"delays_ms" json:"delays_ms"`
	Runs     int       `yaml:"runs" json:"runs"`
	Requests int       `yaml:"requests" json:"requests"`
	Warmup   int       `yaml:"warmup" json:"warmup"`
	Shaper   string    `yaml:"shaper" json:"shaper"`
	Scope    string    `yaml:"scope" json:"scope"`
	// Hook of the userspace shaper: wire (default), ingress or egress.
	Hook string `yaml:"hook,omitempty" json:"hook,omitempty"`
	// Platform the database and the apps are built for and run, one of
	// engine.Platforms; empty: the engine's own. rttlab's
	// agents run the engine's own whatever it says (engine.Platform).
	Platform string `yaml:"platform,omitempty" json:"platform,omitempty"`
	// Emulated records that Platform ran under emulation (not the
	// engine's own): a folder is resumed only the same way.
	Emulated bool `yaml:"-" json:"emulated,omitempty"`
	// platform is Platform settled against the engine by Run.
	platform engine.Platform
	// FloorMs is added to every shaped packet's one-way delay at every
	// setting, 0 ms included (netem.Config.Floor); 0 = none; left out:
	// shaping.DefaultFloorMs for the userspace shaper, none for kernel netem.
	FloorMs *float64 `yaml:"floor_ms,omitempty" json:"floor_ms,omitempty"`
	// Calibrate: auto (calibrate the userspace shaper, not kernel
	// netem), on or off.
	Calibrate string `yaml:"calibrate" json:"calibrate"`
	// CalibratePer: app (default: each app's stack calibrates its own
	// shaper) or run (the first app's stack calibrates, every other app
	// of the run applies its offsets; each app's verification probes
	// still check every setting). The offsets are a property of the host
	// and the shaper, not of the app, so a per-app calibration measures
	// noise as much as anything (README, "How exact the delay is").
	CalibratePer string    `yaml:"calibrate_per,omitempty" json:"calibrate_per,omitempty"`
	Apps         []PlanApp `yaml:"apps" json:"apps"`
	// Probes per setting: ICMP echo count and SELECT 1 runs × calls.
	ICMPCount     int `yaml:"icmp_count" json:"icmp_count"`
	SelectRuns    int `yaml:"select1_runs" json:"select1_runs"`
	SelectCalls   int `yaml:"select1_calls" json:"select1_calls"`
	TaskICMPCount int `yaml:"task_icmp_count" json:"task_icmp_count"`
	// TraceRequests per request type for the round-trip trace of each app.
	TraceRequests int `yaml:"trace_requests" json:"trace_requests"`
	// UnshapedRuns per route measure the app's unshaped baseline in the
	// same run, with the shaper out of the path (no queue, no floor);
	// left out: as many as the route's runs; 0: none.
	UnshapedRuns *int `yaml:"unshaped_runs,omitempty" json:"unshaped_runs,omitempty"`

	// doc is the file the plan was read from, for the line of an error.
	doc *planfile.Doc
}

// PlanApp is one app of a plan.
type PlanApp struct {
	Name     string   `yaml:"name" json:"name"`
	Routes   []string `yaml:"routes,omitempty" json:"routes,omitempty"`
	Mix      string   `yaml:"mix,omitempty" json:"mix,omitempty"`
	Runs     int      `yaml:"runs,omitempty" json:"runs,omitempty"`
	Requests int      `yaml:"requests,omitempty" json:"requests,omitempty"`
	Warmup   int      `yaml:"warmup,omitempty" json:"warmup,omitempty"`
	// Budgets are round-trip budgets of the app's request types, gated on
	// the run's trace (apps.Budgets); they win over app.yaml's for the
	// same type.
	Budgets apps.Budgets `yaml:"budgets,omitempty" json:"budgets,omitempty"`
	// Image makes the entry a user's own app: the image is run as it is
	// (never built, retagged or removed by rttlab), on Port (default
	// 8080), ready when Health (default /) answers 200, its database
	// initialised by DBInit (SQL files, folders of them, pg_dump files,
	// applied in order), with Env (after EnvFile's) added to its
	// environment. Statements per request of its routes are reported,
	// not asserted, unless Statements declares them.
	Image      string            `yaml:"image,omitempty" json:"image,omitempty"`
	Port       int               `yaml:"port,omitempty" json:"port,omitempty"`
	Health     string            `yaml:"health,omitempty" json:"health,omitempty"`
	DBInit     []string          `yaml:"db_init,omitempty" json:"db_init,omitempty"`
	Env        map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	EnvFile    string            `yaml:"env_file,omitempty" json:"env_file,omitempty"`
	Statements map[string]int    `yaml:"statements,omitempty" json:"statements,omitempty"`
	// Compose makes the entry an app of a user's compose file instead of
	// an image: every service of the file runs as the file says (images
	// never built), AppService is the app that is driven and DBService
	// its PostgreSQL; rttlab shapes between those two. Port, Health,
	// DBInit, Env, EnvFile and Statements apply as for Image.
	Compose    string `yaml:"compose,omitempty" json:"compose,omitempty"`
	AppService string `yaml:"app_service,omitempty" json:"app_service,omitempty"`
	DBService  string `yaml:"db_service,omitempty" json:"db_service,omitempty"`
	// Target makes the entry a user's app where it already runs on the
	// cluster (--runtime kube): pod/NAME, deploy/NAME or
	// statefulset/NAME in Namespace (default: default), Container when
	// its pod has several; DBTarget is its PostgreSQL. rttlab starts,
	// edits and restarts neither; the database's credentials come from
	// its environment (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB) or
	// the app's (PGUSER, PGPASSWORD, PGDATABASE or DATABASE_URL). Port,
	// Health, Statements and RequestMix apply as for Image.
	Target    string `yaml:"target,omitempty" json:"target,omitempty"`
	DBTarget  string `yaml:"db_target,omitempty" json:"db_target,omitempty"`
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Container string `yaml:"container,omitempty" json:"container,omitempty"`
	// RequestMix drives an image or compose entry with a weighted mix of
	// its own requests (method, path, headers, body) instead of routes,
	// as rttlab's redmine is driven by its mix; its task route is
	// mix:<name>, and each request's name is a request type.
	RequestMix []workloads.MixRequest `yaml:"request_mix,omitempty" json:"request_mix,omitempty"`
}

// Own says whether the entry is a user's app (an image or a compose file)
// rather than one of rttlab's.
func (a PlanApp) Own() bool { return a.Image != "" || a.Compose != "" || a.Target != "" }

// Calibrates says whether a stack with this shaper backend calibrates:
// "auto" calibrates the userspace shaper's ingress and egress hooks, not
// the wire hook (its floor makes it apply what it is given) nor kernel
// netem.
func (p *Plan) Calibrates(backend string) bool {
	switch p.Calibrate {
	case "on":
		return true
	case "off":
		return false
	}
	return backend == "userspace" && p.Hook != "" && p.Hook != netem.HookWire
}

// Floor is the floor a stack with this shaper backend applies: the
// plan's floor_ms, else shaping.DefaultFloorMs for the userspace shaper and none
// for kernel netem.
func (p *Plan) Floor(backend string) time.Duration {
	if p.FloorMs != nil {
		return netem.FromMs(*p.FloorMs)
	}
	return shaping.DefaultFloor(backend)
}

// StudyDelaysMs are the seed study's settings.
var StudyDelaysMs = []float64{0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1}

// The seed study's counts; a plan file that leaves runs, requests or
// warmup out gets these.
const (
	StudyRuns     = 20
	StudyRequests = 100
	StudyWarmup   = 20
)

// Limits that keep a plan sane.
const (
	maxDelayMs = 1000
	maxRuns    = 10000
	// maxTasks bounds the tasks of one plan: the full study makes 1080.
	maxTasks = 100000
)

// BuiltinPlan returns the named built-in plan: study or smoke.
func BuiltinPlan(name string) (*Plan, bool) {
	switch name {
	case "study":
		return &Plan{
			Name: "study", Seed: 20260926, DelaysMs: append([]float64(nil), StudyDelaysMs...),
			Runs: StudyRuns, Requests: StudyRequests, Warmup: StudyWarmup, Shaper: "auto", Scope: "path",
			ICMPCount: 50, SelectRuns: 5, SelectCalls: 200, TaskICMPCount: 5, TraceRequests: 100,
			Apps: []PlanApp{
				{Name: "go", Routes: []string{"/feed"}},
				{Name: "node", Routes: []string{"/feed"}},
				{Name: "rails", Routes: []string{"/feed", "/feed-naive"}},
				{Name: "axum-cached", Routes: []string{"/feed"}},
				{Name: "axum-raw", Routes: []string{"/feed"}},
				{Name: "redmine", Mix: "redmine"},
				{Name: "aimeos", Mix: "aimeos", Runs: 10, Requests: 50, Warmup: 20},
			},
		}, true
	case "smoke":
		return &Plan{
			Name: "smoke", Seed: 1, DelaysMs: []float64{0, 0.5, 1},
			Runs: 3, Requests: 20, Warmup: 5, Shaper: "auto", Scope: "path", CalibratePer: "run",
			ICMPCount: 20, SelectRuns: 3, SelectCalls: 50, TaskICMPCount: 3, TraceRequests: 20,
			Apps: []PlanApp{
				{Name: "go", Routes: []string{"/feed", "/feed-naive"}},
				{Name: "node", Routes: []string{"/feed"}},
				{Name: "rails", Routes: []string{"/feed", "/feed-naive"}},
				{Name: "axum-cached", Routes: []string{"/feed"}},
				{Name: "axum-raw", Routes: []string{"/feed"}},
				{Name: "redmine", Mix: "redmine"},
				// Built only where Packagist is reachable; elsewhere the run
				// reports it skipped with the reason.
				{Name: "aimeos", Mix: "aimeos"},
			},
		}, true
	}
	return nil, false
}

// LoadPlan returns a built-in plan by name or reads a YAML file (a
// regular file of at most planfile.MaxBytes).
func LoadPlan(nameOrFile string) (*Plan, error) {
	return planfile.Load(nameOrFile, "plan (study, smoke)", BuiltinPlan, ParsePlan)
}

// planSchema names the plan's Go types in its reader's words.
var planSchema = planfile.Schema{
	Kinds: map[string]string{
		"[]rtt.PlanApp":          "a list of apps",
		"rtt.PlanApp":            "an app entry (name, routes or mix, ...)",
		"rtt.Plan":               "a plan (a mapping of delays_ms, apps, ...)",
		"[]workloads.MixRequest": "a list of requests (name, method, path, headers, body, weight)",
		"workloads.MixRequest":   "a request (name, method, path, headers, body, weight)",
	},
	Where: map[string]string{"PlanApp": "in an app entry", "MixRequest": "in a request_mix request"},
}

// ParsePlan parses a YAML plan; errors name the file and line. runs,
// requests and warmup that the file leaves out take the study's values;
// a value given (warmup: 0 included) is kept, and an app's runs or
// requests of 0 are refused (leaving them out means the plan's).
func ParsePlan(file string, data []byte) (*Plan, error) {
	doc, err := planfile.Parse(file, data, planfile.Keys(reflect.TypeFor[Plan]()))
	if err != nil {
		return nil, err
	}
	// The decoder leaves fields the document does not mention untouched.
	p := &Plan{Runs: StudyRuns, Requests: StudyRequests, Warmup: StudyWarmup}
	if err := doc.Decode(p, planSchema); err != nil {
		return nil, err
	}
	p.doc = doc
	if p.Name == "" {
		p.Name = planfile.Name(file)
	}
	for i, a := range p.Apps {
		for _, f := range []struct {
			name string
			v    int
			plan int
		}{{"runs", a.Runs, p.Runs}, {"requests", a.Requests, p.Requests}} {
			if f.v == 0 && doc.Has(fmt.Sprintf("apps[%d].%s", i, f.name)) {
				return nil, doc.Errorf(fmt.Sprintf("apps[%d].%s", i, f.name), "app %s: %s 0 runs nothing: leave it out to use the plan's %s (%d)", a.Name, f.name, f.name, f.plan)
			}
		}
	}
	p.Defaults()
	// Relative paths of an image entry are relative to the plan file.
	for i := range p.Apps {
		p.Apps[i].resolvePaths(file)
	}
	if err := p.Validate(); err != nil {
		return nil, doc.Place(err)
	}
	return p, nil
}

// Place names where a plan's error is: the file and line of the field
// for a plan read from a file, else the plan's name.
func (p *Plan) Place(err error) error {
	if err == nil {
		return nil
	}
	if p.doc != nil {
		return p.doc.Place(err)
	}
	return fmt.Errorf("plan %s: %w", p.Name, err)
}

// Overridden forgets the plan's file: flags changed what it says, so a
// line of the file no longer names where a value came from.
func (p *Plan) Overridden() { p.doc = nil }

// File is the plan's file, "" for a built-in plan or one flags changed.
func (p *Plan) File() string {
	if p.doc == nil {
		return ""
	}
	return p.doc.File
}

// resolvePaths makes db_init, env_file and compose paths relative to the plan
// file's folder absolute.
func (a *PlanApp) resolvePaths(file string) {
	dir := filepath.Dir(file)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		if a, err := filepath.Abs(filepath.Join(dir, p)); err == nil {
			return a
		}
		return p
	}
	for i, p := range a.DBInit {
		a.DBInit[i] = abs(p)
	}
	a.EnvFile = abs(a.EnvFile)
	a.Compose = abs(a.Compose)
}

// Defaults fills unset probe counts, shaper and scope.
func (p *Plan) Defaults() {
	if p.Shaper == "" {
		p.Shaper = "auto"
	}
	if p.Scope == "" {
		p.Scope = "path"
	}
	if p.Calibrate == "" {
		p.Calibrate = "auto"
	}
	if p.ICMPCount == 0 {
		p.ICMPCount = 50
	}
	if p.SelectRuns == 0 {
		p.SelectRuns = 5
	}
	if p.SelectCalls == 0 {
		p.SelectCalls = 200
	}
	if p.TaskICMPCount == 0 {
		p.TaskICMPCount = 5
	}
	if p.TraceRequests == 0 {
		p.TraceRequests = 100
	}
}

// Validate checks everything that can be checked without the apps'
// metadata; ValidateApps checks names and routes against it.
func (p *Plan) Validate() error {
	if len(p.DelaysMs) == 0 {
		return planfile.At("delays_ms", "delays_ms is empty: give at least one RTT setting in ms, e.g. [0, 0.5, 1]")
	}
	seen := map[float64]bool{}
	for i, d := range p.DelaysMs {
		at := fmt.Sprintf("delays_ms[%d]", i)
		switch us := d * 1000; {
		case math.IsNaN(d) || math.IsInf(d, 0):
			return planfile.At(at, "delay %v ms is not a number", d)
		case d < 0:
			return planfile.At(at, "delay %v ms is negative: give 0 to %d ms", d, maxDelayMs)
		case d > maxDelayMs:
			return planfile.At(at, "delay %v ms exceeds 1 s: give 0 to %d ms", d, maxDelayMs)
		case math.Abs(us-math.Round(us)) > 1e-6:
			return planfile.At(at, "delay %v ms is finer than 1 µs: round it to 3 decimals", d)
		case seen[d]:
			return planfile.At(at, "delay %v ms is listed twice: list each setting once", d)
		}
		seen[d] = true
	}
	if err := positive("runs", "runs", p.Runs, maxRuns); err != nil {
		return err
	}
	if err := positive("requests", "requests", p.Requests, workloads.MaxRequests); err != nil {
		return err
	}
	if p.Warmup < 0 || p.Warmup > workloads.MaxRequests {
		return planfile.At("warmup", "warmup %d: use 0..%d", p.Warmup, workloads.MaxRequests)
	}
	if err := p.validateModes(); err != nil {
		return err
	}
	if len(p.Apps) == 0 {
		return planfile.At("apps", "apps is empty: name at least one app")
	}
	names := map[string]bool{}
	for i, a := range p.Apps {
		if err := a.validate(i, names); err != nil {
			return err
		}
		names[a.Name] = true
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"icmp_count", p.ICMPCount}, {"select1_runs", p.SelectRuns}, {"select1_calls", p.SelectCalls}, {"task_icmp_count", p.TaskICMPCount}, {"trace_requests", p.TraceRequests}} {
		if err := positive(f.name, f.name, f.v, 100000); err != nil {
			return err
		}
	}
	return nil
}

// CheckTasks refuses a plan of more than maxTasks tasks. It is checked
// once flags have changed the plan, since they may cut it down.
func (p *Plan) CheckTasks() error {
	tasks := 0
	for _, a := range p.Apps {
		tasks += p.AppTasks(a)
	}
	if tasks > maxTasks {
		return planfile.At("apps", "the plan makes %d tasks, over the limit of %d: fewer runs, settings or routes (--runs, --delays, --apps)", tasks, maxTasks)
	}
	return nil
}

// AppTasks is how many tasks an app of the plan makes: one per route (or
// its mix) per setting per run, and its unshaped runs per route.
func (p *Plan) AppTasks(a PlanApp) int {
	kinds := max(len(a.Routes), 1)
	runs, _, _ := p.AppRuns(a)
	return kinds * (len(p.DelaysMs)*runs + p.AppUnshapedRuns(a))
}

// AppUnshapedRuns is how many unshaped runs each route of an app makes:
// the plan's unshaped_runs, else as many as its runs.
func (p *Plan) AppUnshapedRuns(a PlanApp) int {
	if p.UnshapedRuns != nil {
		return *p.UnshapedRuns
	}
	runs, _, _ := p.AppRuns(a)
	return runs
}

// validateModes checks the shaper, hook, floor, calibration and scope.
func (p *Plan) validateModes() error {
	switch p.Shaper {
	case "auto", "kernel", "userspace":
	default:
		return planfile.At("shaper", "shaper %q: use auto, kernel or userspace", p.Shaper)
	}
	if err := shaping.ValidHook(p.Hook); err != nil {
		return planfile.At("hook", "%v", err)
	}
	if _, err := engine.ParsePlatform(p.Platform); err != nil {
		return planfile.At("platform", "%v", err)
	}
	if f := p.FloorMs; f != nil && !(*f >= 0 && *f <= shaping.MaxFloorMs) {
		return planfile.At("floor_ms", "floor_ms %g: use 0 (none) to %g ms, above the userspace shaper's pass (about 0.2 ms a packet)", *f, shaping.MaxFloorMs)
	}
	switch p.Calibrate {
	case "", "auto", "on", "off":
	default:
		return planfile.At("calibrate", "calibrate %q: use auto, on or off", p.Calibrate)
	}
	switch p.CalibratePer {
	case "", "app", "run":
	default:
		return planfile.At("calibrate_per", "calibrate_per %q: use app or run", p.CalibratePer)
	}
	switch p.Scope {
	case "path", "interface":
	default:
		return planfile.At("scope", "scope %q: use path or interface", p.Scope)
	}
	return nil
}

// validate checks the i-th app entry of a plan; names holds the names of
// the entries before it.
func (a PlanApp) validate(i int, names map[string]bool) error {
	at := func(field string) string { return fmt.Sprintf("apps[%d].%s", i, field) }
	if a.Name == "" {
		return planfile.At(fmt.Sprintf("apps[%d]", i), "an app entry has no name: add name: APP")
	}
	if names[a.Name] {
		return planfile.At(at("name"), "app %s is listed twice: list each app once", a.Name)
	}
	if a.Mix != "" && len(a.Routes) > 0 {
		return planfile.At(at("mix"), "app %s: give routes or a mix, not both", a.Name)
	}
	rs := map[string]bool{}
	for j, r := range a.Routes {
		route := at(fmt.Sprintf("routes[%d]", j))
		if !strings.HasPrefix(r, "/") {
			return planfile.At(route, "app %s: route %q must start with /", a.Name, r)
		}
		if rs[r] {
			return planfile.At(route, "app %s: route %s is listed twice: list each route once", a.Name, r)
		}
		rs[r] = true
	}
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"runs", a.Runs, maxRuns}, {"requests", a.Requests, workloads.MaxRequests}, {"warmup", a.Warmup, workloads.MaxRequests}} {
		if f.v < 0 {
			return planfile.At(at(f.name), "app %s: %s %d is negative: use 1..%d, or leave it out to use the plan's", a.Name, f.name, f.v, f.max)
		}
		if f.v > f.max {
			return planfile.At(at(f.name), "app %s: %s %d exceeds %d", a.Name, f.name, f.v, f.max)
		}
	}
	if err := ValidateOwnApp(a); err != nil {
		return err
	}
	for _, k := range a.Budgets.Keys() {
		if k == "" || a.Budgets[k] < 0 {
			return planfile.At(at("budgets"), "app %s: budget %q: %d: a budget names a request type and is 0 or more round trips per request", a.Name, k, a.Budgets[k])
		}
	}
	return nil
}

func positive(at, name string, v, max int) error {
	if v <= 0 {
		return planfile.At(at, "%s %d must be positive", name, v)
	}
	if v > max {
		return planfile.At(at, "%s %d exceeds %d", name, v, max)
	}
	return nil
}

// AppRuns returns the effective runs, requests and warmup of an app.
func (p *Plan) AppRuns(a PlanApp) (runs, requests, warmup int) {
	runs, requests, warmup = p.Runs, p.Requests, p.Warmup
	if a.Runs > 0 {
		runs = a.Runs
	}
	if a.Requests > 0 {
		requests = a.Requests
	}
	if a.Warmup > 0 {
		warmup = a.Warmup
	}
	return
}

// Tasks expands the plan into tasks: apps in plan order, and within each
// app (one stack) the (route, setting, run) tasks and the unshaped runs
// in an order shuffled by the seed and the app's name, so adding an app
// leaves the others' order unchanged. IDs number the tasks in execution
// order. They are the manifest's tasks (raw.Task).
func (p *Plan) Tasks() []raw.Task {
	var out []raw.Task
	for _, a := range p.Apps {
		runs, _, _ := p.AppRuns(a)
		routes := a.Routes
		switch {
		case a.Mix != "":
			routes = []string{"mix:" + a.Mix}
		case len(a.RequestMix) > 0:
			routes = []string{"mix:" + a.Name}
		}
		var ts, un []raw.Task
		for _, r := range routes {
			for _, d := range p.DelaysMs {
				for run := 1; run <= runs; run++ {
					ts = append(ts, raw.Task{App: a.Name, Route: r, RTTms: d, Run: run})
				}
			}
			for run := 1; run <= p.AppUnshapedRuns(a); run++ {
				un = append(un, raw.Task{App: a.Name, Route: r, Run: run, Unshaped: true})
			}
		}
		rng := stats.StreamRNG(p.Seed, "order:"+a.Name)
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		// The unshaped runs go in at places drawn from a stream of their
		// own: the shaped tasks keep the order a seed has always given.
		urng := stats.StreamRNG(p.Seed, "unshaped:"+a.Name)
		urng.Shuffle(len(un), func(i, j int) { un[i], un[j] = un[j], un[i] })
		for _, u := range un {
			ts = slices.Insert(ts, urng.IntN(len(ts)+1), u)
		}
		out = append(out, ts...)
	}
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

// Settings returns the delays in an order shuffled by the seed (used for
// the per-setting probes of one app).
func (p *Plan) Settings(app string) []float64 {
	ds := append([]float64(nil), p.DelaysMs...)
	sort.Float64s(ds)
	rng := stats.StreamRNG(p.Seed, "probes:"+app)
	rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	return ds
}

// ParseDelaysMs parses a comma list of RTT settings in milliseconds.
func ParseDelaysMs(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number of milliseconds", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("the list of RTT settings is empty: give settings in ms, e.g. 0,0.5,1")
	}
	return out, nil
}
