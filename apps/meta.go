// Package apps holds one build context per application image (source,
// Dockerfile, app.yaml metadata) and embeds them in the rttlab binary so the
// tool works outside a checkout.
package apps

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rttlab/rttlab/workloads"
)

// FeedArticles is the number of articles the database's seed
// (postgres/schema.sql) gives the reader: what /feed returns.
const FeedArticles = 10

// Meta is the content of apps/<name>/app.yaml.
type Meta struct {
	Name        string  `yaml:"name"`
	Description string  `yaml:"description"`
	Kind        string  `yaml:"kind"` // "app" (serves the route contract), "database", "agent"
	Port        int     `yaml:"port"`
	Health      string  `yaml:"health"`
	Routes      []Route `yaml:"routes"`
	// Variants of one image, exposed as apps named <name>-<variant>; the
	// variant is passed to the container in the VariantEnv variable.
	Variants   []string `yaml:"variants"`
	VariantEnv string   `yaml:"variant_env"`
	// Base is the image this context builds FROM (informational; every
	// Dockerfile starts FROM debian:trixie-slim).
	Base string `yaml:"base"`
	// GoBuild lists Go main packages of this module that are cross-built
	// on the host (CGO_ENABLED=0, the engine's OS/arch) and added to the
	// build context under Output before the image is built.
	GoBuild []GoBuild `yaml:"gobuild"`
	// BuildArgs are passed to the image build.
	BuildArgs map[string]string `yaml:"buildargs"`
	// Wire declares, per variant ("" for an app without variants), the
	// protocol work per statement that verify checks on the wire: Parse
	// messages and database round trips.
	Wire map[string]WirePerStatement `yaml:"wire"`
	// Mix names the weighted request mix that drives an application
	// without a route contract (redmine, aimeos).
	Mix string `yaml:"mix"`
	// Auth, when set, adds a header whose value the app writes to a file
	// inside its container at start (e.g. an API key).
	Auth *Auth `yaml:"auth"`
	// Env is added to the container's environment.
	Env map[string]string `yaml:"env"`
	// Budgets are the round-trip budgets of the app's request types that
	// `rttlab trace`, `rttlab ci-smoke` and a run's trace gate on (see
	// Budgets).
	Budgets Budgets `yaml:"budgets"`
	// Image, set for a user's own app (rttlab run --app-image, a plan's
	// image: entry), is the image to run as it is: never built, retagged
	// or removed by rttlab. Empty for the apps of this tree.
	Image string `yaml:"-"`
	// DBInit lists the host paths (SQL files, folders of them, pg_dump
	// files) applied to the database before the app starts.
	DBInit []string `yaml:"-"`
	// Compose, set for an app from a user's compose file (rttlab run
	// --compose, a plan's compose: entry), names the file and its app and
	// database services; Image is then the app service's image.
	Compose *ComposeRef `yaml:"-"`
	// Running, set for a user's app measured where it already runs
	// (rttlab run --runtime kube --target), names it and its database:
	// rttlab starts neither, and leaves both as they are.
	Running *RunningRef `yaml:"-"`
	// RequestMix, set for a user's own app driven by a weighted mix of
	// its own requests (a plan's request_mix) instead of routes: each
	// request type is its own row in trace and verify and has its own
	// budget (a run's samples carry the route mix:<app>).
	RequestMix []workloads.MixRequest `yaml:"-"`
}

// RunningRef names a user's app and its PostgreSQL where they run on a
// cluster: App and DB as kind/name (pod/NAME, deploy/NAME,
// statefulset/NAME) in Namespace, Container the app's container when its
// pod has several.
type RunningRef struct {
	Namespace string
	App, DB   string
	Container string
}

// ComposeRef names a user's compose file and the two services rttlab
// shapes between.
type ComposeRef struct {
	File       string // absolute path
	AppService string
	DBService  string
}

// Route is one HTTP route of the route contract with the database work it
// must do per request.
type Route struct {
	Path string `yaml:"path"`
	// Statements per request. For a parameterised route such as
	// /serial?n=N, StatementsPerN is set instead: statements = N.
	Statements     int  `yaml:"statements"`
	StatementsPerN bool `yaml:"statements_per_n"`
	// Undeclared marks a route whose statements per request nobody
	// declared (a user's own app): they are reported, not asserted.
	Undeclared bool `yaml:"-"`
}

// WirePerStatement is the protocol work one statement costs.
type WirePerStatement struct {
	// Parses per statement; nil when the stack's driver decides per query
	// (node-pg sends an unnamed Parse with every parameterised query and
	// none for a plain one), so only round trips are checked.
	Parses     *float64 `yaml:"parses"`
	RoundTrips float64  `yaml:"round_trips"`
	// ExtraRoundTrips allows up to this many more round trips per request
	// that happen after the response, off the critical path (a trailing
	// Close): whether the capture attributes them to this request or the
	// next depends on timing.
	ExtraRoundTrips float64 `yaml:"extra_round_trips"`
}

// Auth is a request header read from a file in the app container.
type Auth struct {
	Header string `yaml:"header"`
	File   string `yaml:"file"`
}

// GoBuild names one Go program cross-built into the context.
type GoBuild struct {
	Package string `yaml:"package"` // import path relative to the module root, e.g. ./apps/go
	Output  string `yaml:"output"`  // file name inside the build context
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)

// ValidName reports whether s may name an app (it becomes an image name).
func ValidName(s string) bool { return nameRE.MatchString(s) }

// ParseMeta parses and validates app.yaml content. dir names the folder in
// errors.
func ParseMeta(dir string, data []byte) (*Meta, error) {
	var m Meta
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			return nil, fmt.Errorf("apps/%s/app.yaml:%d: %s", dir, be.Line, be.Msg)
		}
		return nil, fmt.Errorf("apps/%s/app.yaml: %w", dir, err)
	}
	if err := m.Validate(dir); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the metadata for the mistakes a person adding an app makes.
func (m *Meta) Validate(dir string) error {
	where := "apps/" + dir + "/app.yaml"
	if m.Name == "" {
		return fmt.Errorf("%s: name is missing (set name: %s)", where, dir)
	}
	if m.Name != dir {
		return fmt.Errorf("%s: name %q does not match its folder %q", where, m.Name, dir)
	}
	if !ValidName(m.Name) {
		return fmt.Errorf("%s: name %q is invalid: use lower-case letters, digits and '-'", where, m.Name)
	}
	switch m.Kind {
	case "":
		m.Kind = "app"
	case "app", "database", "agent":
	default:
		return fmt.Errorf("%s: kind %q is unknown (app, database or agent)", where, m.Kind)
	}
	if m.Kind != "app" {
		return nil
	}
	if m.Port <= 0 || m.Port > 65535 {
		return fmt.Errorf("%s: port %d is out of range 1-65535", where, m.Port)
	}
	if !strings.HasPrefix(m.Health, "/") {
		return fmt.Errorf("%s: health %q must be a path starting with /", where, m.Health)
	}
	if len(m.Routes) == 0 {
		return fmt.Errorf("%s: routes are missing (see apps/README.md for the route contract)", where)
	}
	seen := map[string]bool{}
	for _, r := range m.Routes {
		if !strings.HasPrefix(r.Path, "/") {
			return fmt.Errorf("%s: route %q must start with /", where, r.Path)
		}
		if seen[r.Path] {
			return fmt.Errorf("%s: route %s is listed twice", where, r.Path)
		}
		seen[r.Path] = true
		if r.Statements < 0 {
			return fmt.Errorf("%s: route %s: statements %d is negative", where, r.Path, r.Statements)
		}
		if r.StatementsPerN && r.Statements != 0 {
			return fmt.Errorf("%s: route %s: set statements or statements_per_n, not both", where, r.Path)
		}
	}
	if len(m.Variants) > 0 && m.VariantEnv == "" {
		return fmt.Errorf("%s: variants need variant_env (the variable that selects one)", where)
	}
	for _, v := range m.Variants {
		if !ValidName(m.Name + "-" + v) {
			return fmt.Errorf("%s: variant %q gives the invalid name %s-%s", where, v, m.Name, v)
		}
	}
	for _, g := range m.GoBuild {
		if g.Package == "" || g.Output == "" || strings.Contains(g.Output, "/") {
			return fmt.Errorf("%s: gobuild entries need package and a plain output file name", where)
		}
	}
	return m.validateBudgets(where)
}

// Route returns the route with the given path.
func (m *Meta) Route(path string) (Route, bool) {
	for _, r := range m.Routes {
		if r.Path == path {
			return r, true
		}
	}
	return Route{}, false
}

// RoutePaths lists the route paths in metadata order.
func (m *Meta) RoutePaths() []string {
	out := make([]string, 0, len(m.Routes))
	for _, r := range m.Routes {
		out = append(out, r.Path)
	}
	return out
}

// Load reads every app folder of fsys (folders holding an app.yaml).
func Load(fsys fs.FS) (map[string]*Meta, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	out := map[string]*Meta{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name()+"/app.yaml")
		if err != nil {
			continue
		}
		m, err := ParseMeta(e.Name(), data)
		if err != nil {
			return nil, err
		}
		out[m.Name] = m
	}
	return out, nil
}

// Names returns the sorted names of apps of the given kind ("" for all).
func Names(all map[string]*Meta, kind string) []string {
	var out []string
	for n, m := range all {
		if kind == "" || m.Kind == kind {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Target is one runnable app: an app folder, or one variant of it.
type Target struct {
	Name    string // go, axum-cached
	Meta    *Meta
	Variant string
	Env     map[string]string // metadata env plus the variant switch
	// Image is the image reference to run: empty for the image rttlab
	// builds from the app's folder, a user's image otherwise (Meta.Image).
	Image string
}

// Targets lists every runnable app (variants expanded), sorted by name.
func Targets(all map[string]*Meta) []Target {
	var out []Target
	for _, n := range Names(all, "app") {
		m := all[n]
		if len(m.Variants) == 0 {
			out = append(out, Target{Name: n, Meta: m, Env: copyEnv(m.Env), Image: m.Image})
			continue
		}
		for _, v := range m.Variants {
			env := copyEnv(m.Env)
			env[m.VariantEnv] = v
			out = append(out, Target{Name: n + "-" + v, Meta: m, Variant: v, Env: env})
		}
	}
	return out
}

// Resolve finds a runnable app by name; an app with variants is named
// <app>-<variant>. The error lists the known names.
func Resolve(all map[string]*Meta, name string) (Target, error) {
	var known []string
	for _, t := range Targets(all) {
		if t.Name == name {
			return t, nil
		}
		known = append(known, t.Name)
	}
	return Target{}, fmt.Errorf("unknown app %q (known apps: %s)", name, strings.Join(known, ", "))
}

func copyEnv(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// StatementsPerRequest returns the contract's statements for a route
// (with ?n=N for per-N routes), or -1 when unknown.
func (m *Meta) StatementsPerRequest(route string) float64 {
	path, q, _ := strings.Cut(route, "?")
	r, ok := m.Route(route) // an own app's route with its query
	if !ok {
		r, ok = m.Route(path)
	}
	if !ok || r.Undeclared {
		return -1
	}
	if r.StatementsPerN {
		var n int
		if _, err := fmt.Sscanf(q, "n=%d", &n); err == nil {
			return float64(n)
		}
		return -1
	}
	return float64(r.Statements)
}
