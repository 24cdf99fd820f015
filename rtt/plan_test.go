package rtt

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/rtt/raw"
)

const planYAML = `name: mine
seed: 7
delays_ms: [0, 0.5, 1]
runs: 4
requests: 30
warmup: 5
apps:
  - name: go
    routes: [/feed, /feed-naive]
  - name: node
    routes: [/feed]
    runs: 2
`

func TestParsePlan(t *testing.T) {
	p, err := ParsePlan("mine.yaml", []byte(planYAML))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "mine" || p.Seed != 7 || p.Shaper != "auto" || p.Scope != "path" || p.ICMPCount != 50 {
		t.Fatalf("plan %+v", p)
	}
	runs, req, warm := p.AppRuns(p.Apps[1])
	if runs != 2 || req != 30 || warm != 5 {
		t.Fatalf("node runs %d %d %d", runs, req, warm)
	}
	ts := p.Tasks()
	// Per route: its runs at each setting and as many unshaped runs.
	if len(ts) != 2*3*4+1*3*2+2*4+1*2 {
		t.Fatalf("%d tasks", len(ts))
	}
	unshaped := 0
	for _, tk := range ts {
		if tk.Unshaped {
			unshaped++
			if tk.RTTms != 0 {
				t.Errorf("unshaped task at %g ms", tk.RTTms)
			}
		}
	}
	if unshaped != 10 {
		t.Errorf("%d unshaped tasks, want 10", unshaped)
	}
	zero := 0
	p.UnshapedRuns = &zero
	if n := len(p.Tasks()); n != 2*3*4+1*3*2 || p.AppTasks(p.Apps[0]) != 24 {
		t.Errorf("unshaped_runs: 0: %d tasks", n)
	}
	for i, tk := range ts {
		if tk.ID != i+1 {
			t.Fatalf("task %d has id %d", i, tk.ID)
		}
	}
	// Apps stay grouped (one stack each), go first.
	if ts[0].App != "go" || ts[len(ts)-1].App != "node" {
		t.Fatalf("apps not grouped: %v ... %v", ts[0], ts[len(ts)-1])
	}
}

func TestTasksDeterministicAndShuffled(t *testing.T) {
	p, _ := ParsePlan("mine.yaml", []byte(planYAML))
	a, b := p.Tasks(), p.Tasks()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different orders")
	}
	// Shuffled: not in generation order.
	inOrder := true
	for i := 1; i < 24; i++ {
		if a[i].RTTms < a[i-1].RTTms {
			inOrder = false
		}
	}
	if inOrder {
		t.Fatal("tasks are not shuffled")
	}
	p2 := *p
	p2.Seed = 8
	if reflect.DeepEqual(a, p2.Tasks()) {
		t.Fatal("different seed gave the same order")
	}
	// Adding an app does not change the order of another app's tasks.
	p3 := *p
	p3.Apps = append([]PlanApp{{Name: "rails", Routes: []string{"/feed"}}}, p.Apps...)
	var goA, goB []raw.Task
	for _, tk := range a {
		if tk.App == "go" {
			tk.ID = 0
			goA = append(goA, tk)
		}
	}
	for _, tk := range p3.Tasks() {
		if tk.App == "go" {
			tk.ID = 0
			goB = append(goB, tk)
		}
	}
	if !reflect.DeepEqual(goA, goB) {
		t.Fatal("adding an app changed go's task order")
	}
	// Pinned: the order for seed 7 is part of the results format (resume
	// replays it), so a change of the shuffle must show up here.
	pinned := []raw.Task{
		{ID: 1, App: "go", Route: "/feed-naive", RTTms: 0.5, Run: 4},
		{ID: 2, App: "go", Route: "/feed", RTTms: 0, Run: 1},
	}
	if !reflect.DeepEqual(a[:2], pinned) || a[len(a)-1] != (raw.Task{ID: 40, App: "node", Route: "/feed", RTTms: 1, Run: 2}) {
		t.Fatalf("seed 7 order changed: first %+v, last %+v", a[:2], a[len(a)-1])
	}
	// The unshaped runs go in between: the shaped tasks keep their order.
	zero := 0
	p4 := *p
	p4.UnshapedRuns = &zero
	var shaped []raw.Task
	for _, tk := range a {
		if !tk.Unshaped {
			tk.ID = 0
			shaped = append(shaped, tk)
		}
	}
	for i, tk := range p4.Tasks() {
		if tk.ID = 0; i >= len(shaped) || tk != shaped[i] {
			t.Fatalf("unshaped runs changed the shaped tasks' order at %d", i)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"malformed":          {"delays_ms: [0, 1\napps: []\n", "mine.yaml:1: a list opened with [ is not closed"},
		"unclosed on line 3": {"name: x\nseed: 1\ndelays_ms: [0, 1\n", "mine.yaml:3: a list opened with [ is not closed"},
		"20 digits":          {strings.Replace(planYAML, "runs: 4", "runs: 12345678901234567890", 1), `mine.yaml:4: "1234567...`},
		"per-app runs huge":  {strings.Replace(planYAML, "runs: 2", "runs: 1000000000", 1), "mine.yaml:12: app node: runs 1000000000 exceeds 10000"},
		"per-app runs 0":     {strings.Replace(planYAML, "runs: 2", "runs: 0", 1), "mine.yaml:12: app node: runs 0 runs nothing: leave it out to use the plan's runs (4)"},
		"per-app requests 0": {strings.Replace(planYAML, "runs: 2", "requests: 0", 1), "mine.yaml:12: app node: requests 0 runs nothing"},
		"per-app negative":   {strings.Replace(planYAML, "runs: 2", "warmup: -1", 1), "mine.yaml:12: app node: warmup -1 is negative"},
		"unknown field":      {planYAML + "colour: red\n", `mine.yaml:13: unknown field "colour" (known: name, seed, delays_ms, runs, requests, warmup, shaper,`},
		"unknown app field":  {strings.Replace(planYAML, "runs: 2", "runz: 2", 1), `mine.yaml:12: unknown field "runz" in an app entry (known: name, routes, mix, runs, requests, warmup, budgets, image, port, health, db_init, env, env_file, statements, compose, app_service, db_service, target, db_target, namespace, container, request_mix)`},
		"apps not a list":    {"delays_ms: [0]\napps: go\n", `mine.yaml:2: "go" is not a list of apps`},
		"empty delays":       {strings.Replace(planYAML, "[0, 0.5, 1]", "[]", 1), "mine.yaml:3: delays_ms is empty"},
		"negative delay":     {strings.Replace(planYAML, "[0, 0.5, 1]", "[0, -1]", 1), "mine.yaml:3: delay -1 ms is negative"},
		"absurd delay":       {strings.Replace(planYAML, "[0, 0.5, 1]", "[0,\n  5000]", 1), "mine.yaml:4: delay 5000 ms exceeds 1 s"},
		"sub-µs delay":       {strings.Replace(planYAML, "[0, 0.5, 1]", "[0, 0.0001]", 1), "finer than 1 µs"},
		"duplicate delay":    {strings.Replace(planYAML, "[0, 0.5, 1]", "[0, 0.5, 0.5]", 1), "mine.yaml:3: delay 0.5 ms is listed twice"},
		"zero runs":          {strings.Replace(planYAML, "runs: 4", "runs: 0", 1), "mine.yaml:4: runs 0 must be positive"},
		"negative reqs":      {strings.Replace(planYAML, "requests: 30", "requests: -3", 1), "mine.yaml:5: requests -3 must be positive"},
		"no apps":            {"delays_ms: [0]\nruns: 1\nrequests: 1\n", "mine.yaml: apps is empty"},
		"dup app":            {planYAML + "  - name: go\n    routes: [/feed]\n", "mine.yaml:13: app go is listed twice"},
		"bad shaper":         {planYAML + "shaper: tc\n", `mine.yaml:13: shaper "tc"`},
		"bad scope":          {planYAML + "scope: host\n", `mine.yaml:13: scope "host"`},
		"route and mix":      {strings.Replace(planYAML, "routes: [/feed]\n", "routes: [/feed]\n    mix: redmine\n", 1), "mine.yaml:12: app node: give routes or a mix, not both"},
		"relative route":     {strings.Replace(planYAML, "routes: [/feed]\n", "routes:\n      - feed\n", 1), "mine.yaml:12: app node: route \"feed\" must start with /"},
		"empty":              {"", "the plan is empty"},
		"wrong type delay":   {strings.Replace(planYAML, "[0, 0.5, 1]", "[0, fast]", 1), `mine.yaml:3: "fast" is not a number`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePlan("mine.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			// The reader of a plan file does not know Go's type names.
			if strings.Contains(err.Error(), "rtt.") || strings.Contains(err.Error(), "float64") {
				t.Fatalf("error names Go types: %q", err)
			}
		})
	}
}

func TestBuiltinPlansValid(t *testing.T) {
	for _, n := range []string{"study", "smoke"} {
		p, ok := BuiltinPlan(n)
		if !ok {
			t.Fatalf("no %s plan", n)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	s, _ := BuiltinPlan("study")
	if !reflect.DeepEqual(s.DelaysMs, StudyDelaysMs) || s.Runs != 20 || s.Requests != 100 || s.Warmup != 20 {
		t.Fatalf("study plan %+v", s)
	}
}

func TestParseDelaysMs(t *testing.T) {
	d, err := ParseDelaysMs("0, 0.05,1")
	if err != nil || !reflect.DeepEqual(d, []float64{0, 0.05, 1}) {
		t.Fatalf("%v %v", d, err)
	}
	for _, bad := range []string{"", ",", "1ms", "abc"} {
		if _, err := ParseDelaysMs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(planYAML))
	f.Add([]byte("delays_ms: [0]\nruns: 1\nrequests: 1\napps: [{name: go}]\n"))
	f.Add([]byte("apps: [{name: go, routes: [/x], mix: y}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan("fuzz.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		// A plan that parses is valid and expands consistently.
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed plan fails Validate: %v", err)
		}
		if len(p.DelaysMs) > 50 || p.Runs > 50 {
			return
		}
		ts := p.Tasks()
		for i, tk := range ts {
			if tk.ID != i+1 {
				t.Fatal("ids not sequential")
			}
		}
	})
}

// The smoke plan exercises every app there is, so make run and CI cover
// every framework; the study covers the study's framework rows.
func TestBuiltinPlansCoverApps(t *testing.T) {
	all, err := apps.Load(apps.FS("")) // the tree compiled into rttlab
	if err != nil {
		t.Fatal(err)
	}
	smoke, _ := BuiltinPlan("smoke")
	in := map[string]bool{}
	for _, a := range smoke.Apps {
		in[a.Name] = true
	}
	for _, tg := range apps.Targets(all) {
		if !in[tg.Name] {
			t.Errorf("smoke plan lacks app %s", tg.Name)
		}
	}
	if err := ValidatePlanApps(smoke, all); err != nil {
		t.Fatal(err)
	}
	study, _ := BuiltinPlan("study")
	if err := ValidatePlanApps(study, all); err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, a := range study.Apps {
		for _, r := range a.Routes {
			rows[a.Name+" "+r] = true
		}
	}
	for _, want := range []string{"go /feed", "node /feed", "rails /feed", "rails /feed-naive", "axum-cached /feed", "axum-raw /feed"} {
		if !rows[want] {
			t.Errorf("study plan lacks %s", want)
		}
	}
}

// A YAML value that happens to be the word EOF is not an empty plan: only
// a document with nothing in it is.
func TestPlanEOFValueIsNotEmpty(t *testing.T) {
	_, err := ParsePlan("mine.yaml", []byte(strings.Replace(planYAML, "runs: 4", "runs: EOF", 1)))
	if err == nil || strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "mine.yaml") {
		t.Fatalf("err = %v, want a type error naming the file, not an empty plan", err)
	}
	for _, empty := range []string{"", "\n", "# only a comment\n"} {
		if _, err := ParsePlan("mine.yaml", []byte(empty)); err == nil || !strings.Contains(err.Error(), "the plan is empty") {
			t.Errorf("%q: err = %v, want an empty plan", empty, err)
		}
	}
}

// runs, requests and warmup are optional: left out, they take the study's
// values; given, even warmup 0, they are kept.
func TestPlanCountDefaults(t *testing.T) {
	p, err := ParsePlan("mine.yaml", []byte("delays_ms: [0, 1]\napps: [{name: go, routes: [/feed]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	study, _ := BuiltinPlan("study")
	if p.Runs != study.Runs || p.Requests != study.Requests || p.Warmup != study.Warmup {
		t.Fatalf("runs %d requests %d warmup %d, want the study's %d %d %d", p.Runs, p.Requests, p.Warmup, study.Runs, study.Requests, study.Warmup)
	}
	p, err = ParsePlan("mine.yaml", []byte("delays_ms: [0, 1]\nwarmup: 0\nruns: 3\napps: [{name: go, routes: [/feed]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Runs != 3 || p.Requests != study.Requests || p.Warmup != 0 {
		t.Fatalf("runs %d requests %d warmup %d, want 3 %d 0", p.Runs, p.Requests, p.Warmup, study.Requests)
	}
}

// A plan of too many tasks is refused once flags have had their say (they
// may cut it down), with the line of its apps.
func TestPlanTaskCap(t *testing.T) {
	yml := strings.Replace(strings.Replace(strings.Replace(planYAML, "runs: 4", "runs: 10000", 1), "runs: 2", "runs: 10000", 1), "[0, 0.5, 1]", "[0, 0.25, 0.5, 1]", 1)
	p, err := ParsePlan("mine.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Place(p.CheckTasks()); err == nil || !strings.HasPrefix(err.Error(), "mine.yaml:7: the plan makes 150000 tasks, over the limit of 100000") {
		t.Errorf("err = %v", err)
	}
	p.Runs, p.Apps[1].Runs = 10, 0
	if err := p.CheckTasks(); err != nil {
		t.Errorf("cut down: %v", err)
	}
}

// Apps and routes are checked against the apps' metadata after the plan
// is read; the error still names the file and the entry's line.
func TestValidatePlanAppsLines(t *testing.T) {
	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"unknown app":   {strings.Replace(planYAML, "name: node", "name: django", 1), "mine.yaml:10: "},
		"unknown route": {strings.Replace(planYAML, "routes: [/feed, /feed-naive]", "routes:\n      - /feed\n      - /feeed", 1), "mine.yaml:11: app go: route /feeed is unknown (known: "},
		"unknown mix":   {strings.Replace(planYAML, "routes: [/feed]", "mix: shop", 1), `mine.yaml:11: app node: mix "shop" is unknown (redmine or aimeos)`},
	} {
		p, err := ParsePlan("mine.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = ValidatePlanApps(p, all)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to start %q", name, err, c.want)
		}
		p.Overridden()
		if err := ValidatePlanApps(p, all); err == nil || !strings.HasPrefix(err.Error(), "plan mine: ") {
			t.Errorf("%s, flags over the file: err = %v, want the plan named", name, err)
		}
	}
}
