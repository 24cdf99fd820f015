package rtt

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

const ownMixYAML = `delays_ms: [0, 1]
apps:
  - name: shop
    image: example/shop:1.4
    request_mix:
      - name: list
        path: /api/items
        weight: 6
      - name: create
        method: POST
        path: /api/items
        headers: {Content-Type: application/json, Authorization: "Bearer t0ken"}
        body: '{"name": "widget"}'
        weight: 1
    budgets: {list: 2}
`

func TestPlanRequestMix(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.yaml")
	p, err := ParsePlan(file, []byte(ownMixYAML))
	if err != nil {
		t.Fatal(err)
	}
	rm := p.Apps[0].RequestMix
	if len(rm) != 2 || !reflect.DeepEqual(rm[0], workloads.MixRequest{Name: "list", Path: "/api/items", Weight: 6}) ||
		rm[1].Method != "POST" || rm[1].Headers["Authorization"] != "Bearer t0ken" || rm[1].Body != `{"name": "widget"}` || rm[1].Weight != 1 {
		t.Fatalf("request_mix %+v", rm)
	}
	for _, tk := range p.Tasks() {
		if tk.Route != "mix:shop" {
			t.Fatalf("task %+v", tk)
		}
	}
	all := map[string]*apps.Meta{}
	if err := AddOwnApps(p, all); err != nil {
		t.Fatal(err)
	}
	tg, _ := apps.Resolve(all, "shop")
	if err := ValidatePlanApps(p, all); err != nil {
		t.Fatal(err)
	}
	if types, err := TraceTypes(tg); err != nil || !slices.Equal(types, []string{"create", "list"}) {
		t.Fatalf("types %v %v", types, err)
	}
	if err := ValidatePlanBudgets(p, all); err != nil {
		t.Fatal(err)
	}
	p.Apps[0].Budgets = map[string]int{"/api/items": 2}
	if err := ValidatePlanBudgets(p, all); err == nil || !strings.Contains(err.Error(), "its request types: create, list") {
		t.Errorf("a budget on a path, not a type: %v", err)
	}
	// The plan travels in the manifest as JSON: the mix survives it.
	b, _ := json.Marshal(p)
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil || !slices.EqualFunc(back.Apps[0].RequestMix, rm, func(a, b workloads.MixRequest) bool {
		return a.Name == b.Name && a.Body == b.Body && a.Headers["Authorization"] == b.Headers["Authorization"]
	}) {
		t.Errorf("manifest round trip %+v %v", back.Apps, err)
	}
}

func TestPlanRequestMixErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.yaml")
	for name, c := range map[string]struct{ from, to, want string }{
		"method":        {"method: POST", "method: FETCH", `:10: app shop: request create: method "FETCH" is unknown: use GET, POST, PUT, PATCH, DELETE, HEAD`},
		"empty name":    {"name: list", `name: ""`, ":6: app shop: request 1 has no name"},
		"duplicate":     {"name: create", "name: list", `:9: app shop: request name "list" is used twice`},
		"path":          {"path: /api/items\n        weight: 6", "path: api/items\n        weight: 6", `:7: app shop: request list: path "api/items" must start with /`},
		"zero weight":   {"weight: 6", "weight: 0", ":8: app shop: request list: weight 0 must be a finite number above 0"},
		"neg weight":    {"weight: 1", "weight: -1", ":14: app shop: request create: weight -1 must be"},
		"nan weight":    {"weight: 6", "weight: .nan", ":8: app shop: request list: weight NaN must be"},
		"inf weight":    {"weight: 6", "weight: .inf", ":8: app shop: request list: weight +Inf must be"},
		"header name":   {"Content-Type:", `"Content Type":`, `:12: app shop: request create: header name "Content Type" is not a valid HTTP header name`},
		"body on GET":   {"method: POST", "method: GET", ":13: app shop: request create: a GET request has no body"},
		"body on HEAD":  {"method: POST", "method: head", ":13: app shop: request create: a HEAD request has no body"},
		"no items":      {ownMixYAML[strings.Index(ownMixYAML, "    request_mix:"):strings.Index(ownMixYAML, "    budgets")], "    request_mix: []\n", ":5: app shop: request_mix has no requests"},
		"with routes":   {"    request_mix:", "    routes: [/a]\n    request_mix:", ":6: app shop: give routes or a request_mix, not both"},
		"with mix":      {"    request_mix:", "    mix: redmine\n    request_mix:", ":5: app shop: a mix drives rttlab's own redmine and aimeos apps; give routes or a request_mix"},
		"not own":       {"    image: example/shop:1.4\n", "", ":4: app shop: request_mix applies to an app given by image: or compose:"},
		"statements":    {"    budgets: {list: 2}", "    statements: {list: 2}", ":15: app shop: statements declare counts of routes"},
		"unknown field": {"weight: 6", "weight: 6\n        verb: GET", `:9: unknown field "verb" in a request_mix request (known: name, method, path, headers, body, weight)`},
		"weight kind":   {"weight: 6", "weight: many", `:8: "many" is not a number`},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(ownMixYAML, c.from) {
				t.Fatalf("%q is not in the plan", c.from)
			}
			_, err := ParsePlan(file, []byte(strings.Replace(ownMixYAML, c.from, c.to, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), file+":") || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line with %q", err, c.want)
			}
		})
	}
}

// shopMixApp is the plan entry of ownMixYAML on the fake lab's app.
func shopMixApp(l *fakelab.Lab) PlanApp {
	return PlanApp{Name: "shop", Image: "example/shop:1.4", Port: l.Apps["go"].Port, Health: "/health",
		RequestMix: []workloads.MixRequest{
			{Name: "list", Path: "/api/items", Weight: 6},
			{Name: "create", Method: "POST", Path: "/api/items", Weight: 1,
				Headers: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer t0ken"}, Body: `{"name": "widget"}`},
		}}
}

// verify and trace of an own app driven by its request_mix: each type
// answers 2xx to its method, headers and body; statements are reported;
// the trace agent gets each type's requests whole.
func TestFakeOwnAppRequestMixVerifyTrace(t *testing.T) {
	ctx := context.Background()
	fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
		l.AddImage("example/shop:1.4", nil)
		m, err := OwnAppMeta(shopMixApp(l))
		if err != nil {
			t.Fatal(err)
		}
		tg := apps.Target{Name: "shop", Meta: m, Env: m.Env, Image: m.Image}
		st, sh := startFake(t, l, stack.StackOptions{Target: tg}, "path")
		var got []string
		for _, c := range verifyFake(ctx, t, l, st, shaping.VerifyOptions{Requests: 4, Shaping: sh}) {
			got = append(got, c.Route+" "+c.What+" "+c.Observed)
		}
		want := []string{"/health health status 200", "list status of GET /api/items 200", "create status of POST /api/items 201",
			"list statements per request 2", "create statements per request 2",
			"create round trips per request (wire) 2", "create Parse messages per request (wire) 0",
			"list round trips per request (wire) 2", "list Parse messages per request (wire) 0"}
		if !slices.Equal(got, want) {
			t.Errorf("checks\n%q\nwant\n%q", got, want)
		}
		if !slices.Contains(l.Items, `POST /api/items Bearer t0ken {"name": "widget"}`) || !slices.Contains(l.Items, "GET /api/items  ") {
			t.Errorf("the app saw %q", l.Items)
		}

		mix, err := shaping.MixFor(m)
		if err != nil || mix == nil {
			t.Fatalf("mix %v %v", mix, err)
		}
		l.Traced = nil
		rows, err := shaping.TraceApp(ctx, l.Runtime(), sh, shaping.TraceOptions{Requests: shaping.TraceRequests(tg, mix, 3, 5, 1), Warmup: 2, Weights: shaping.MixWeights(mix)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].Type != "create" || rows[1].Type != "list" || rows[0].N != 3 || rows[0].Expected != -1 ||
			rows[0].Weight != 1.0/7 || rows[1].Weight != 6.0/7 || rows[1].RoundTrips.Median != fakelab.ItemStmts {
			t.Errorf("trace rows %+v", rows)
		}
		for _, r := range l.Traced {
			if r.Path == "/api/items" && r.Method == "POST" && (r.Body != `{"name": "widget"}` || r.Headers["Authorization"] != "Bearer t0ken") {
				t.Errorf("traced %+v", r)
			}
		}
		if n := len(l.Traced); n != 2*(2+3) || l.Traced[0].Type != "warmup" || l.Traced[0].Method != "POST" {
			t.Errorf("traced %d requests, first %+v", n, l.Traced[0])
		}
	})
}

// A run of an own app with a request_mix: mix:<app> tasks, each load
// drawing its seeded sequence from the mix the orchestrator hands over.
func TestRunFakeOwnAppRequestMix(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		lab.AddImage("example/shop:1.4", nil)
		p := fakePlan()
		p.Apps = []PlanApp{shopMixApp(lab)}
		p.Apps[0].Runs, p.Apps[0].Requests = 2, 20
		all := copyMetas(lab.Apps)
		if err := AddOwnApps(p, all); err != nil {
			t.Fatal(err)
		}
		dir, err := Run(context.Background(), lab.Runtime(), lab, all, RunOptions{Plan: p, OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err != nil {
			t.Fatal(err)
		}
		d := loadFolder(t, dir)
		if len(d.Done) != 8 || len(d.Manifest.Tasks) != 8 { // 2 runs at 3 settings, 2 unshaped
			t.Fatalf("done %v of %d", d.Done, len(d.Manifest.Tasks))
		}
		loads := lab.Loads()
		js, _ := json.Marshal(p.Apps[0].RequestMix)
		for i, ld := range loads {
			tk := d.Manifest.Tasks[i]
			wantSeed := p.Seed ^ stats.FNV64("shop/run"+strconv.Itoa(tk.Run))
			if tk.Route != "mix:shop" || ld.MixJSON != string(js) || ld.Seed != wantSeed || len(ld.Calls) != 21 {
				t.Fatalf("task %+v load %+v", tk, ld)
			}
			if i > 0 && loads[i-1].Seed == ld.Seed && !reflect.DeepEqual(loads[i-1].Calls, ld.Calls) {
				t.Error("the same seed drew different sequences")
			}
		}
		types := map[string]bool{}
		for _, r := range d.Trace {
			types[r.Type] = true
		}
		if len(d.Trace) != 2 || !types["list"] || !types["create"] {
			t.Errorf("trace %+v", d.Trace)
		}
		lab.RequireEmpty(t)
	})
}
