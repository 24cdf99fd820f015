package placement

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
)

func TestPlacePlanBuiltins(t *testing.T) {
	for _, n := range []string{"placement", "placement-smoke"} {
		p, ok := BuiltinPlan(n)
		if !ok {
			t.Fatalf("%s missing", n)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		all, err := apps.Load(apps.FS(""))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ValidateApp(all); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	p, _ := BuiltinPlan("placement")
	ow := p.OneWayMs(false)
	if ow[[2]string{NodeA, NodeDB}] != 0.125 || ow[[2]string{NodeDB, NodeA}] != 0.125 || ow[[2]string{NodeB, NodeDB}] != 0.0625 || ow[[2]string{NodeB, NodeClient}] != 0 {
		t.Errorf("one-way delays %v", ow)
	}
	if p.KeepAlive == nil || !*p.KeepAlive || p.Rounds != 5 {
		t.Errorf("keep_alive %v rounds %d", p.KeepAlive, p.Rounds)
	}
	ho := p.OneWayMs(true)
	if ho[[2]string{NodeB, NodeClient}] != 0.25 || ho[[2]string{NodeClient, NodeB}] != 0 {
		t.Errorf("held-out one-way delays %v", ho)
	}
	if p.LinkRTTMs(NodeDB, NodeA) != 0.25 || p.LinkRTTMs(NodeClient, NodeA) != 0 {
		t.Error("LinkRTTMs")
	}
}

func TestPlacePlanFile(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte("routes: [/feed]\nlinks:\n  - {a: a, b: db, rtt_ms: 1}\nrequests: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "p" || p.Requests != 7 || len(p.Links) != 1 || p.Links[0].RTTMs != 1 || len(p.HeldOut) != 1 || p.Warmup != 20 || len(p.Routes) != 1 || len(p.Policies) != 4 {
		t.Errorf("plan %+v", p)
	}
}

func TestPlacePlanBadInput(t *testing.T) {
	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"links:\n  - {a: a, b: dbx, rtt_ms: 1}\n", `p.yaml:2: link a–dbx: unknown node "dbx"`},
		{"links:\n  - {a: a, b: a, rtt_ms: 1}\n", "p.yaml:2: link a–a: a link to itself"},
		{"links:\n  - {a: a, b: db, rtt_ms: -1}\n", "p.yaml:2: link a–db: rtt_ms -1 ms is negative"},
		{"links:\n  - {a: a, b: db, rtt_ms: 1001}\n", "p.yaml:2: link a–db: rtt_ms 1001 ms exceeds 1 s"},
		{"links:\n  - {a: a, b: db, rtt_ms: 1}\n  - {a: db, b: a, rtt_ms: 2}\n", "p.yaml:3: link db–a is listed twice"},
		{"held_out:\n  - {from: b, to: b, ms: 1}\n", "p.yaml:2: held_out b→b: a link to itself"},
		{"held_out:\n  - {from: b, to: client, ms: -0.5}\n", "p.yaml:2: held_out b→client: ms -0.5 ms is negative"},
		{"links:\n  - {a: a, b: db, rtt: 1}\n", `p.yaml:2: unknown field "rtt" (known: a, b, rtt_ms)`},
		{"colour: red\n", `p.yaml:1: unknown field "colour"`},
		{"sweep_n: [0, -1]\n", "p.yaml:1: sweep_n -1: use 0..1000"},
		{"sweep_n: [1001]\n", "p.yaml:1: sweep_n 1001: use 0..1000"},
		{"requests: 0\n", "p.yaml:1: requests 0: zero requests measure nothing"},
		{"routed_requests: 0\n", "p.yaml:1: routed_requests 0: zero requests"},
		{"rounds: 0\n", "p.yaml:1: rounds 0: use 1 to 500"},
		{"requests: 3\nrounds: 4\n", "p.yaml:2: rounds 4: use 1 to 3"},
		{"policies: [nearest]\n", "p.yaml:1: policies: "},
		{"concurrency_rates: [1.5]\n", "p.yaml:1: concurrency_rates 1.5: use fractions of capacity in (0, 1]"},
		{"floor_ms: -0.1\n", "p.yaml:1: floor_ms -0.1: use 0 (none) to 10 ms"},
		{"floor_ms: 11\n", "p.yaml:1: floor_ms 11: use 0 (none) to 10 ms"},
		{"held_out:\n  - {from: b, to: client, ms: 999.9}\n", "p.yaml: b→client: 999.9 ms one-way plus floor_ms 0.3 exceeds 1 s"},
		{"sweep_n:\n  - 3\n  - 1001\n", "p.yaml:3: sweep_n 1001: use 0..1000"},
		{"routed_n: [1, 0]\n", "p.yaml:1: routed_n 0: use 1..1000 serial calls"},
		{"routed_n:\n  - -3\n", "p.yaml:2: routed_n -3: use 1..1000"},
		{"routed_n: [3, 3]\n", "p.yaml:1: routed_n 3 is listed twice"},
		{"policies:\n  - user-first\n  - nearest\n", "p.yaml:3: policies: "},
		{"cpus: {a: 0}\n", "p.yaml:1: cpus a: 0: give a number of CPUs of at least 0.01"},
		{"cpus:\n  b: -1\n", "p.yaml:2: cpus b: -1: give a number of CPUs of at least 0.01"},
		{"cpus: {b: 0.001}\n", "p.yaml:1: cpus b: 0.001: give a number of CPUs of at least 0.01"},
		{"cpus:\n  db: 1\n", `p.yaml:2: cpus: "db" is not a compute host: limit a or b`},
		{"cpus: {b: 100000}\n", "p.yaml:1: cpus b: 100000 is more than this host's"},
		{"nodes:\n  client: n1\n  web: n2\n", `p.yaml:3: nodes: "web" is not a study node: pin client, a, b, db`},
		{"nodes: {db: \"\"}\n", "p.yaml:1: nodes db: no cluster node named: give one of kubectl get nodes, or leave db out"},
		{"nodes:\n  a: n1\n  b: Worker_2\n", `p.yaml:3: nodes b: "Worker_2" cannot name a cluster node: give its name as kubectl get nodes shows it`},
		{"nodes: {a: -n1}\n", `p.yaml:1: nodes a: "-n1" cannot name a cluster node`},
		{"nodes: {a: " + strings.Repeat("n", 64) + "}\n", "p.yaml:1: nodes a: \"nnn"},
		{"nodes: [n1, n2]\n", "p.yaml:1: "},
		{"", "p.yaml: the plan is empty"},
	} {
		_, err := ParsePlan("p.yaml", []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want prefix %q", tc.yaml, err, tc.want)
		}
	}
	p, err := ParsePlan("p.yaml", []byte("routes: [/feed, /nope]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ValidateApp(all); err == nil || !strings.HasPrefix(err.Error(), "p.yaml:1: route /nope: unknown to app rails (its routes: /feed, /feed-naive, /serial, /work)") {
		t.Errorf("unknown route: %v", err)
	}
	p, _ = ParsePlan("p.yaml", []byte("app: nosuch\n"))
	if _, err := p.ValidateApp(all); err == nil || !strings.HasPrefix(err.Error(), "p.yaml:1: app: ") {
		t.Errorf("unknown app: %v", err)
	}
	if _, err := LoadPlan("/nonexistent/plan.yaml"); err == nil || !strings.Contains(err.Error(), "neither a built-in placement plan") {
		t.Errorf("missing file: %v", err)
	}
}

// The rounds' shares add up to the plan's counts, the first rounds taking
// the remainder.
func TestPlaceRoundShares(t *testing.T) {
	for _, c := range []struct{ total, rounds int }{{500, 5}, {40, 2}, {7, 3}, {3, 3}, {1, 1}} {
		sum, parts := 0, []int{}
		for i := 0; i < c.rounds; i++ {
			n := share(c.total, c.rounds, i)
			sum += n
			parts = append(parts, n)
		}
		if sum != c.total || parts[0] < parts[len(parts)-1] || parts[0]-parts[len(parts)-1] > 1 || parts[len(parts)-1] < 1 {
			t.Errorf("%d over %d rounds: %v", c.total, c.rounds, parts)
		}
	}
}

// A plan file pins study nodes to cluster nodes under nodes:; the pins
// survive the manifest's JSON, which --resume reads the plan back from,
// and a plan without them writes no nodes field.
func TestPlacePlanNodes(t *testing.T) {
	p, err := LoadPlan("testdata/two-nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{NodeClient: "node-1", NodeA: "node-1", NodeB: "node-2", NodeDB: "node-2"}
	if !reflect.DeepEqual(p.Nodes, want) || !slices.Equal(p.ClusterNodes(), []string{"node-1", "node-2"}) || p.nodeOf(NodeB) != "node-2" {
		t.Errorf("nodes %v, cluster nodes %v", p.Nodes, p.ClusterNodes())
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil || !reflect.DeepEqual(back.Nodes, want) {
		t.Errorf("the plan read back from JSON: nodes %v, %v", back.Nodes, err)
	}
	part, err := ParsePlan("p.yaml", []byte("nodes: {db: db-host.example.internal}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if part.nodeOf(NodeDB) != "db-host.example.internal" || part.nodeOf(NodeA) != "" {
		t.Errorf("db pinned alone: %v", part.Nodes)
	}
	smoke, _ := BuiltinPlan("placement-smoke")
	if b, _ := json.Marshal(smoke); strings.Contains(string(b), `"nodes"`) || smoke.ClusterNodes() != nil {
		t.Errorf("a plan without nodes wrote them: %s", b)
	}
}
