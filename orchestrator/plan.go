package orchestrator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rttlab/rttlab/apps"
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
	// FloorMs is added to every shaped packet's one-way delay at every
	// setting, 0 ms included (netem.Config.Floor); 0 = none.
	FloorMs float64 `yaml:"floor_ms,omitempty" json:"floor_ms,omitempty"`
	// Calibrate: auto (calibrate the userspace shaper, not kernel
	// netem), on or off.
	Calibrate string `yaml:"calibrate" json:"calibrate"`
	// CalibratePer: app (default: each app's stack calibrates its own
	// shaper) or run (the first app's stack calibrates, every other app
	// of the run applies its offsets; each app's verification probes
	// still check every setting). The offsets are a property of the host
	// and the shaper, not of the app: across the six apps of one smoke
	// run they spread 75-160 µs per side with residuals of ±110 µs, so a
	// per-app calibration measures noise as much as anything.
	CalibratePer string    `yaml:"calibrate_per,omitempty" json:"calibrate_per,omitempty"`
	Apps         []PlanApp `yaml:"apps" json:"apps"`
	// Probes per setting: ICMP echo count and SELECT 1 runs × calls.
	ICMPCount     int `yaml:"icmp_count" json:"icmp_count"`
	SelectRuns    int `yaml:"select1_runs" json:"select1_runs"`
	SelectCalls   int `yaml:"select1_calls" json:"select1_calls"`
	TaskICMPCount int `yaml:"task_icmp_count" json:"task_icmp_count"`
	// TraceRequests per request type for the round-trip trace of each app.
	TraceRequests int `yaml:"trace_requests" json:"trace_requests"`
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
	// RequestMix drives an image or compose entry with a weighted mix of
	// its own requests (method, path, headers, body) instead of routes,
	// as rttlab's redmine is driven by its mix; its task route is
	// mix:<name>, and each request's name is a request type.
	RequestMix []workloads.MixRequest `yaml:"request_mix,omitempty" json:"request_mix,omitempty"`
}

// Own says whether the entry is a user's app (an image or a compose file)
// rather than one of rttlab's.
func (a PlanApp) Own() bool { return a.Image != "" || a.Compose != "" }

// Calibrates says whether a stack with this shaper backend calibrates.
func (p *Plan) Calibrates(backend string) bool {
	switch p.Calibrate {
	case "on":
		return true
	case "off":
		return false
	}
	return backend == "userspace"
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
	maxDelayMs  = 1000
	maxRuns     = 10000
	maxRequests = 1000000
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

// LoadPlan returns a built-in plan by name or reads a YAML file.
func LoadPlan(nameOrFile string) (*Plan, error) {
	if p, ok := BuiltinPlan(nameOrFile); ok {
		return p, nil
	}
	data, err := os.ReadFile(nameOrFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("plan %q is neither a built-in plan (study, smoke) nor a file", nameOrFile)
		}
		return nil, fmt.Errorf("plan: %w", err)
	}
	return ParsePlan(nameOrFile, data)
}

// ParsePlan parses a YAML plan; errors name the file and line. runs,
// requests and warmup that the file leaves out take the study's values;
// a value given (warmup: 0 included) is kept.
func ParsePlan(file string, data []byte) (*Plan, error) {
	// The decoder leaves fields the document does not mention untouched.
	p := &Plan{Runs: StudyRuns, Requests: StudyRequests, Warmup: StudyWarmup}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the plan is empty", file)
		}
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		return nil, yamlError(file, msg)
	}
	if p.Name == "" {
		base := file
		if i := strings.LastIndexByte(base, '/'); i >= 0 {
			base = base[i+1:]
		}
		p.Name = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	}
	p.Defaults()
	// Relative paths of an image entry are relative to the plan file.
	for i := range p.Apps {
		p.Apps[i].resolvePaths(file)
	}
	if err := p.Validate(); err != nil {
		var fe *ownAppFieldError
		if errors.As(err, &fe) {
			if line := planFieldLine(data, fe.App, fe.Field); line > 0 {
				return nil, fmt.Errorf("%s:%d: %w", file, line, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
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

// planFieldLine finds the line of field in the apps entry named app of a
// plan document; 0 when it cannot. A dotted field goes deeper, a number
// taking an item of a list: request_mix.1.method is the method of the
// second request (or the line of the deepest part that is there).
func planFieldLine(data []byte, app, field string) int {
	if entry := planAppEntry(data, app); entry != nil {
		return nodeLine(entry, strings.Split(field, "."))
	}
	return 0
}

// planAppEntry is the apps entry named app of a plan document, or nil.
func planAppEntry(data []byte, app string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	appsNode := mappingValue(doc.Content[0], "apps")
	if appsNode == nil || appsNode.Kind != yaml.SequenceNode {
		return nil
	}
	for _, entry := range appsNode.Content {
		if n := mappingValue(entry, "name"); n != nil && n.Value == app {
			return entry
		}
	}
	return nil
}

// nodeLine is the line of the node that path names under n: a key of a
// mapping, an index of a list; the deepest found when the rest is not there.
func nodeLine(n *yaml.Node, path []string) int {
	if len(path) == 0 {
		return n.Line
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == path[0] {
				if len(path) == 1 {
					return n.Content[i].Line
				}
				return nodeLine(n.Content[i+1], path[1:])
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(path[0]); err == nil && i >= 0 && i < len(n.Content) {
			return nodeLine(n.Content[i], path[1:])
		}
	}
	return n.Line
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
		return errors.New("delays_ms is empty: give at least one RTT setting in ms, e.g. [0, 0.5, 1]")
	}
	seen := map[float64]bool{}
	for _, d := range p.DelaysMs {
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return fmt.Errorf("delay %v ms is not a number", d)
		}
		if d < 0 {
			return fmt.Errorf("delay %v ms is negative", d)
		}
		if d > maxDelayMs {
			return fmt.Errorf("delay %v ms exceeds 1 s", d)
		}
		us := d * 1000
		if math.Abs(us-math.Round(us)) > 1e-6 {
			return fmt.Errorf("delay %v ms is finer than 1 µs", d)
		}
		if seen[d] {
			return fmt.Errorf("delay %v ms is listed twice", d)
		}
		seen[d] = true
	}
	if err := positive("runs", p.Runs, maxRuns); err != nil {
		return err
	}
	if err := positive("requests", p.Requests, maxRequests); err != nil {
		return err
	}
	if p.Warmup < 0 || p.Warmup > maxRequests {
		return fmt.Errorf("warmup %d: use 0..%d", p.Warmup, maxRequests)
	}
	switch p.Shaper {
	case "auto", "kernel", "userspace":
	default:
		return fmt.Errorf("shaper %q: use auto, kernel or userspace", p.Shaper)
	}
	if err := validHook(p.Hook); err != nil {
		return err
	}
	if p.FloorMs < 0 || p.FloorMs > 10 || math.IsNaN(p.FloorMs) {
		return fmt.Errorf("floor_ms %g: use 0 (none) to 10 ms", p.FloorMs)
	}
	switch p.Calibrate {
	case "", "auto", "on", "off":
	default:
		return fmt.Errorf("calibrate %q: use auto, on or off", p.Calibrate)
	}
	switch p.CalibratePer {
	case "", "app", "run":
	default:
		return fmt.Errorf("calibrate_per %q: use app or run", p.CalibratePer)
	}
	switch p.Scope {
	case "path", "interface":
	default:
		return fmt.Errorf("scope %q: use path or interface", p.Scope)
	}
	if len(p.Apps) == 0 {
		return errors.New("apps is empty: name at least one app")
	}
	names := map[string]bool{}
	for _, a := range p.Apps {
		if a.Name == "" {
			return errors.New("an app entry has no name")
		}
		if names[a.Name] {
			return fmt.Errorf("app %s is listed twice", a.Name)
		}
		names[a.Name] = true
		if a.Mix != "" && len(a.Routes) > 0 {
			return fmt.Errorf("app %s: give routes or a mix, not both", a.Name)
		}
		rs := map[string]bool{}
		for _, r := range a.Routes {
			if !strings.HasPrefix(r, "/") {
				return fmt.Errorf("app %s: route %q must start with /", a.Name, r)
			}
			if rs[r] {
				return fmt.Errorf("app %s: route %s is listed twice", a.Name, r)
			}
			rs[r] = true
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"runs", a.Runs}, {"requests", a.Requests}, {"warmup", a.Warmup}} {
			if f.v < 0 {
				return fmt.Errorf("app %s: %s %d is negative", a.Name, f.name, f.v)
			}
		}
		if err := ValidateOwnApp(a); err != nil {
			return err
		}
		for _, k := range a.Budgets.Keys() {
			if k == "" || a.Budgets[k] < 0 {
				return fmt.Errorf("app %s: budget %q: %d: a budget names a request type and is 0 or more round trips per request", a.Name, k, a.Budgets[k])
			}
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"icmp_count", p.ICMPCount}, {"select1_runs", p.SelectRuns}, {"select1_calls", p.SelectCalls}, {"task_icmp_count", p.TaskICMPCount}, {"trace_requests", p.TraceRequests}} {
		if err := positive(f.name, f.v, 100000); err != nil {
			return err
		}
	}
	return nil
}

func positive(name string, v, max int) error {
	if v <= 0 {
		return fmt.Errorf("%s %d must be positive", name, v)
	}
	if v > max {
		return fmt.Errorf("%s %d exceeds %d", name, v, max)
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

// TaskSpec is one (app, route, setting, run) of a plan.
type TaskSpec struct {
	ID    int     `json:"id"`
	App   string  `json:"app"`
	Route string  `json:"route"`
	RTTms float64 `json:"rtt_ms"`
	Run   int     `json:"run"`
}

// Tasks expands the plan into tasks: apps in plan order, and within each
// app (one stack) the (route, setting, run) tasks in an order shuffled by
// the seed and the app's name, so adding an app leaves the others' order
// unchanged. IDs number the tasks in execution order.
func (p *Plan) Tasks() []TaskSpec {
	var out []TaskSpec
	for _, a := range p.Apps {
		runs, _, _ := p.AppRuns(a)
		routes := a.Routes
		switch {
		case a.Mix != "":
			routes = []string{"mix:" + a.Mix}
		case len(a.RequestMix) > 0:
			routes = []string{"mix:" + a.Name}
		}
		var ts []TaskSpec
		for _, r := range routes {
			for _, d := range p.DelaysMs {
				for run := 1; run <= runs; run++ {
					ts = append(ts, TaskSpec{App: a.Name, Route: r, RTTms: d, Run: run})
				}
			}
		}
		rng := rand.New(rand.NewPCG(p.Seed, fnv64("order:"+a.Name)))
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
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
	rng := rand.New(rand.NewPCG(p.Seed, fnv64("probes:"+app)))
	rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	return ds
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
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

var (
	yamlLineRE     = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownFieldRE = regexp.MustCompile(`^field (.+) not found in type [\w.]*?(\w+)$`)
	wrongTypeRE    = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
)

// yamlError turns a YAML decoder message into "file:line: what", in the
// plan's words rather than Go's: an unknown field lists the known ones,
// a value of the wrong kind says what kind was expected.
func yamlError(file, msg string) error {
	msg = oneLine(strings.TrimPrefix(msg, "yaml: "))
	line := ""
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, msg = m[1], m[2]
	}
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		switch m[2] {
		case "Plan":
			msg = fmt.Sprintf("unknown field %q (known: %s)", m[1], strings.Join(yamlKeys(reflect.TypeFor[Plan]()), ", "))
		case "PlanApp":
			msg = fmt.Sprintf("unknown field %q in an app entry (known: %s)", m[1], strings.Join(yamlKeys(reflect.TypeFor[PlanApp]()), ", "))
		case "MixRequest":
			msg = fmt.Sprintf("unknown field %q in a request_mix request (known: %s)", m[1], strings.Join(yamlKeys(reflect.TypeFor[workloads.MixRequest]()), ", "))
		default:
			msg = fmt.Sprintf("unknown field %q", m[1])
		}
	} else if m := wrongTypeRE.FindStringSubmatch(msg); m != nil {
		got := map[string]string{"seq": "a list", "map": "a mapping"}[m[1]]
		if got == "" {
			got = m[1]
		}
		if m[2] != "" {
			got = fmt.Sprintf("%q", m[2])
		}
		if want, ok := yamlKinds[m[3]]; ok {
			msg = fmt.Sprintf("%s is not %s", got, want)
		}
	}
	if line != "" {
		return fmt.Errorf("%s:%s: %s", file, line, msg)
	}
	return fmt.Errorf("%s: %s", file, msg)
}

// yamlKinds names the Go types of the plan's fields the way the plan's
// reader knows them.
var yamlKinds = map[string]string{
	"float64":                 "a number",
	"int":                     "a whole number",
	"uint64":                  "a non-negative whole number",
	"string":                  "a string",
	"[]float64":               "a list of numbers",
	"[]string":                "a list of strings",
	"[]orchestrator.PlanApp":  "a list of apps",
	"orchestrator.PlanApp":    "an app entry (name, routes or mix, ...)",
	"orchestrator.Plan":       "a plan (a mapping of delays_ms, apps, ...)",
	"map[string]interface {}": "a mapping",
	"map[string]string":       "a mapping of strings",
	"[]workloads.MixRequest":  "a list of requests (name, method, path, headers, body, weight)",
	"workloads.MixRequest":    "a request (name, method, path, headers, body, weight)",
}

// yamlKeys lists the YAML keys of a struct type in field order.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			out = append(out, k)
		}
	}
	return out
}

// oneLine folds a message onto one line (YAML errors quote the input).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
