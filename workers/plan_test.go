package workers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var testLimits = Limits{MaxWorkers: 8, MaxThreads: 64}

func TestBuiltinPlans(t *testing.T) {
	p, ok := BuiltinPlan(PlanWorkers, testLimits)
	if !ok {
		t.Fatal("no workers plan")
	}
	if len(p.Policies) != 7 || len(p.Layouts) != 3 || len(p.Mixes) != 2 || len(p.DBRTTMs) != 2 || len(p.LoadFractions) != 5 || p.Runs < 6 {
		t.Errorf("workers plan %+v", p)
	}
	if p.Baseline != AcceptRace || p.Reference != ProxyJSQ {
		t.Errorf("baseline %s reference %s", p.Baseline, p.Reference)
	}
	if got := len(p.Tasks()); got != 7*3*2*2*5*p.Runs {
		t.Errorf("%d tasks", got)
	}
	s, ok := BuiltinPlan(PlanWorkersSmoke, testLimits)
	if !ok {
		t.Fatal("no smoke plan")
	}
	if s.Runs >= p.Runs || s.Requests >= p.Requests || len(s.Tasks()) >= 50 {
		t.Errorf("smoke plan is not reduced: %d runs, %d requests, %d tasks", s.Runs, s.Requests, len(s.Tasks()))
	}
	if !slices.Contains(s.Policies, ProxyJSQ) || !slices.Contains(s.Policies, AcceptRace) {
		t.Errorf("smoke policies %v", s.Policies)
	}
	// The built-in plans fit a 1-CPU host (2 workers ≤ 4).
	if _, ok := BuiltinPlan(PlanWorkers, DefaultLimits(1)); !ok {
		t.Error("workers plan refused on one CPU")
	}
	if _, ok := BuiltinPlan("nope", testLimits); ok {
		t.Error("unknown built-in accepted")
	}
}

func TestParsePlanDefaultsAndLists(t *testing.T) {
	p, err := ParsePlan("dir/mine.yaml", []byte(`
seed: 7
policies: [puma:wflbw=0, proxy:jsq]
configs: ["1x1", 4x2]
mixes:
  - {name: tiny, cpu_ms: 0.5, queries: 0}
load_fractions: [0.5, 1]
capacity:
  max_rate: 800
`), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "mine" || p.Seed != 7 || p.File() != "dir/mine.yaml" {
		t.Errorf("name %q seed %d file %q", p.Name, p.Seed, p.File())
	}
	if len(p.Policies) != 2 || p.Layouts[1] != (Layout{4, 2}) || len(p.Mixes) != 1 || p.Mixes[0].Path() != "/work?cpu_ms=0.5&queries=0" {
		t.Errorf("lists: %v %v %v", p.Policies, p.Layouts, p.Mixes)
	}
	if !slices.Equal(p.LoadFractions, []float64{0.5, 1}) || !slices.Equal(p.DBRTTMs, []float64{0, 1}) {
		t.Errorf("fractions %v rtts %v", p.LoadFractions, p.DBRTTMs)
	}
	if p.Capacity.MaxRate != 800 || p.Capacity.StartRate != 20 || p.Runs != 6 {
		t.Errorf("defaults not kept: %+v runs %d", p.Capacity, p.Runs)
	}
}

func TestParsePlanBadInput(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown policy", "policies:\n  - puma:wflbw=0\n  - nginx:lb\n", "f.yaml:3: policies: unknown policy \"nginx:lb\""},
		{"unknown puma key", "policies: [puma:wflbw=0, puma:wait=1]\n", "f.yaml:1: policies: unknown policy \"puma:wait=1\""},
		{"unknown proxy rule", "policies: [puma:wflbw=0, proxy:random]\n", "unknown policy \"proxy:random\""},
		{"negative wait", "policies: [puma:wflbw=0, puma:wflbw=-1]\n", "wflbw -1 s outside"},
		{"duplicate policy", "policies: [puma:wflbw=0, puma:wflbw=default, puma:wflbw=0.005]\n", "puma:wflbw=0.005 is listed twice (as puma:wflbw=default)"},
		{"no baseline", "policies: [proxy:jsq]\n", "f.yaml:1: baseline puma:wflbw=0 is not among the policies"},
		{"zero workers", "configs: [2x2, 0x2]\n", "f.yaml:1: configs: configuration 0x2: 0 workers; give at least 1"},
		{"zero threads", "configs:\n  - 2x0\n", "f.yaml:2: configs: configuration 2x0: 0 threads"},
		{"too many workers", "configs:\n  - 9x1\n", "f.yaml:2: configs: configuration 9x1: 9 workers exceed this host's limit of 8"},
		{"too many threads", "configs:\n  - 2x65\n", "65 threads exceed the limit of 64"},
		{"bad config", "configs: [two-by-two]\n", "want WORKERSxTHREADS"},
		{"fraction zero", "load_fractions:\n  - 0.5\n  - 0\n", "f.yaml:3: load fraction 0 outside (0, 1]"},
		{"fraction above 1", "load_fractions: [1.5]\n", "f.yaml:1: load fraction 1.5 outside (0, 1]"},
		{"fraction negative", "load_fractions: [-0.1]\n", "outside (0, 1]"},
		{"cpu negative", "mixes:\n  - name: a\n    cpu_ms: -1\n    queries: 1\n", "f.yaml:3: mix a: cpu_ms -1 is negative"},
		{"cpu too large", "mixes:\n  - {name: a, cpu_ms: 1000.5, queries: 1}\n", "f.yaml:2: mix a: cpu_ms 1000.5 exceeds 1000"},
		{"queries too many", "mixes:\n  - name: a\n    cpu_ms: 1\n    queries: 1001\n", "f.yaml:4: mix a: queries 1001 exceeds 1000"},
		{"queries negative", "mixes:\n  - {name: a, cpu_ms: 1, queries: -2}\n", "queries -2 is negative"},
		{"mix twice", "mixes:\n  - {name: a, cpu_ms: 1, queries: 1}\n  - {name: a, cpu_ms: 2, queries: 1}\n", "f.yaml:3: mix a is listed twice"},
		{"zero requests", "runs: 2\nrequests: 0\n", "f.yaml:2: requests 0: zero measures nothing"},
		{"zero runs", "runs: 0\n", "f.yaml:1: runs 0: zero measures nothing"},
		{"negative warmup", "warmup: -1\n", "f.yaml:1: warmup -1"},
		{"rtt negative", "db_rtt_ms: [0, -1]\n", "f.yaml:1: db_rtt_ms -1"},
		{"unknown field", "runs: 2\nworkerz: 3\n", "f.yaml:2: unknown field \"workerz\""},
		{"unknown mix field", "mixes:\n  - {name: a, cpu: 1}\n", "f.yaml:2: unknown field \"cpu\" in a mix"},
		{"unknown capacity field", "capacity:\n  rate: 3\n", "f.yaml:2: unknown field \"rate\" in capacity"},
		{"wrong type", "runs: many\n", "f.yaml:1: \"many\" is not a whole number"},
		{"load basis", "load_basis: median\n", "f.yaml:1: load_basis \"median\""},
		{"capacity start", "capacity:\n  start_rate: 0\n", "f.yaml:2: capacity start_rate 0"},
		{"empty", "", "f.yaml: the plan is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan("f.yaml", []byte(c.yaml), testLimits)
			if err == nil {
				t.Fatalf("accepted:\n%s", c.yaml)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Errorf("error does not name the file: %q", err)
			}
		})
	}
}

func TestLoadPlan(t *testing.T) {
	if _, err := LoadPlan(PlanWorkersSmoke, testLimits); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("runs: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPlan(f, testLimits)
	if err != nil || p.Runs != 3 || p.Name != "p" {
		t.Fatalf("%v %+v", err, p)
	}
	if _, err := LoadPlan(filepath.Join(t.TempDir(), "missing.yaml"), testLimits); err == nil || !strings.Contains(err.Error(), "neither a built-in") {
		t.Errorf("missing file: %v", err)
	}
}

func TestTasksOrder(t *testing.T) {
	p, _ := BuiltinPlan(PlanWorkers, testLimits)
	ts := p.Tasks()
	again := p.Tasks()
	if !slices.Equal(ts, again) {
		t.Fatal("tasks differ between calls")
	}
	seen := map[string]bool{}
	lastRound := 0
	var visits []string
	for i, tk := range ts {
		if tk.ID != i+1 {
			t.Fatalf("task %d has ID %d", i, tk.ID)
		}
		if tk.Round < lastRound {
			t.Fatalf("round %d after %d", tk.Round, lastRound)
		}
		lastRound = tk.Round
		k := tk.Cell().String() + " run " + string(rune('0'+tk.Run))
		if seen[k] {
			t.Fatalf("task %s twice", k)
		}
		seen[k] = true
		if tk.Layout.String()+" "+tk.Policy.Stack() != tk.Stack {
			t.Errorf("task %d stack %q", tk.ID, tk.Stack)
		}
		v := tk.Stack + "@" + string(rune('0'+tk.Round))
		if len(visits) == 0 || visits[len(visits)-1] != v {
			visits = append(visits, v)
		}
	}
	// Each stack is visited once per round: 3 configurations × (4 puma
	// settings + the proxy) × runs.
	if want := 3 * 5 * p.Runs; len(visits) != want {
		t.Errorf("%d stack visits, want %d", len(visits), want)
	}
	// Shuffled: the first round does not run the stacks in plan order.
	if ts[0].Stack == "2x1 puma:wflbw=0" && ts[len(ts)-1].Stack == "2x4 proxy" && ts[1].Fraction == 0.3 {
		t.Error("tasks look unshuffled")
	}
	// Another seed, another order.
	p2 := *p
	p2.Seed = 2
	if slices.Equal(p2.Tasks(), ts) {
		t.Error("seed does not change the order")
	}
	// Common random numbers: policies of one comparison share a schedule.
	seeds := map[string]uint64{}
	for _, tk := range ts {
		k := tk.Cell().group().String() + string(rune('0'+tk.Run))
		if s, ok := seeds[k]; ok && s != tk.Seed {
			t.Fatalf("%s: policies get different schedules", k)
		}
		seeds[k] = tk.Seed
	}
}

func TestCapacityTargetsAndRate(t *testing.T) {
	p, _ := BuiltinPlan(PlanWorkersSmoke, testLimits)
	targets := p.CapacityTargets()
	if len(targets) != 2 { // baseline only, 2 mixes × 1 RTT
		t.Fatalf("%d capacity targets: %+v", len(targets), targets)
	}
	for _, c := range targets {
		if c.Policy != AcceptRace {
			t.Errorf("capacity of %s searched with load basis baseline and every_policy off", c.Policy)
		}
	}
	full, _ := BuiltinPlan(PlanWorkers, testLimits)
	if got := len(full.CapacityTargets()); got != 7*3*2*2 {
		t.Errorf("every_policy: %d targets", got)
	}
	caps := map[CapacityKey]float64{}
	for _, c := range targets {
		caps[c.Key] = 200
	}
	for _, tk := range p.Tasks() {
		r, err := p.Rate(tk, caps)
		if err != nil {
			t.Fatal(err)
		}
		if r != tk.Fraction*200 {
			t.Errorf("task %d rate %v", tk.ID, r)
		}
		o := p.OpenLoopOptions(tk, "http://app:3000", r)
		if o.Count != p.Warmup+p.Requests || !o.NewConnPerRequest || o.Requests[0].Path != tk.Mix.Path() {
			t.Errorf("open-loop options %+v", o)
		}
		if (tk.Policy.Kind == KindProxy) != (o.Header[HeaderPolicy] != "") {
			t.Errorf("%s: policy header %q", tk.Policy, o.Header[HeaderPolicy])
		}
	}
	if _, err := p.Rate(p.Tasks()[0], map[CapacityKey]float64{}); err == nil {
		t.Error("rate without capacity")
	}
	if o := p.Capacity.Options(); o.MaxLatencyP99.Milliseconds() != 250 || o.MaxTrials != 5 {
		t.Errorf("capacity options %+v", o)
	}
}

func TestPolicyText(t *testing.T) {
	for _, s := range []string{"puma:wflbw=0", "puma:wflbw=0.001", "puma:wflbw=default", "puma:wflbw=0.05", "proxy:jsq", "proxy:round-robin", "proxy:p2c"} {
		p, err := ParsePolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != s {
			t.Errorf("%s round-trips as %s", s, p)
		}
	}
	if p, _ := ParsePolicy(" PUMA:WFLBW=Default "); p != PumaDefault {
		t.Errorf("case: %v", p)
	}
	if got := AcceptRace.PumaConfig(Layout{2, 4}); got != "workers 2\nthreads 4, 4\nwait_for_less_busy_worker 0\n" {
		t.Errorf("accept race config %q", got)
	}
	if got := PumaDefault.PumaConfig(Layout{2, 1}); strings.Contains(got, "wait_for") {
		t.Errorf("default config sets the wait: %q", got)
	}
	if got := ProxyJSQ.PumaConfig(Layout{3, 2}); got != "workers 0\nthreads 2, 2\n" {
		t.Errorf("proxy worker config %q", got)
	}
	if l, err := ParseLayout("2×4"); err != nil || l != (Layout{2, 4}) {
		t.Errorf("2×4: %v %v", l, err)
	}
}

func TestLoadTime(t *testing.T) {
	p, _ := BuiltinPlan(PlanWorkersSmoke, testLimits)
	// 3 policies × 2 mixes × 2 runs, each 170 requests at 0.3 and 0.9 of
	// 100/s: 12 × 170 × (1/30 + 1/90) s.
	got := p.LoadTime(nil, 100).Seconds()
	if want := 12 * 170 * (1.0/30 + 1.0/90); got < want-0.01 || got > want+0.01 {
		t.Errorf("load time %v s, want %v", got, want)
	}
	full, _ := BuiltinPlan(PlanWorkers, testLimits)
	t.Logf("workers plan at 250 requests/s everywhere: %s of load", full.LoadTime(nil, 250).Round(time.Minute))
}
