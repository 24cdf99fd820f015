package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results/resultstest"
	"github.com/rttlab/rttlab/workloads"
)

// errNoEngineHere is what every engine connection returns in these tests:
// commands that need an engine stop there, and none can touch an engine
// of the machine the tests run on.
var errNoEngineHere = errors.New("unit tests do not connect to an engine")

// errNoClusterHere is the same for a cluster (--runtime kube).
var errNoClusterHere = fmt.Errorf("%w: unit tests do not connect to a cluster", kube.ErrNoCluster)

func TestMain(m *testing.M) {
	connect = func(context.Context) (*engine.Runtime, error) { return nil, errNoEngineHere }
	kubeConnect = func(context.Context) (*kube.Cluster, error) { return nil, errNoClusterHere }
	os.Exit(m.Run())
}

// execLine runs a command line as main does and returns its exit status,
// standard output and standard error.
func execLine(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := execute(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// testFolder copies the results folder in testdata (raw files only) to a
// temporary folder.
func testFolder(t *testing.T) string {
	t.Helper()
	return resultstest.CopyFolder(t, filepath.Join("testdata", "results-go"))
}

func TestExitCodes(t *testing.T) {
	ctx := context.Background()
	empty := t.TempDir()
	folder := testFolder(t)
	noSamples := testFolder(t)
	if err := os.WriteFile(filepath.Join(noSamples, "samples.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kindFolder := func(manifest string) string {
		d := t.TempDir()
		writeFile(t, d, "manifest.json", manifest)
		return d
	}
	place, workersA, workersB := kindFolder(`{"kind":"placement"}`), kindFolder(`{"kind":"workers"}`), kindFolder(`{"kind":"workers"}`)
	cases := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"--version"}, 0, ""},
		{[]string{"compare", folder, place}, 2, "was written by rttlab run and " + place + " by rttlab place: compare two of a kind"},
		{[]string{"compare", workersA, workersB}, 2, "are worker studies' folders: compare takes two folders of rttlab run or of rttlab place"},
		{[]string{"report", place, "--p50-target", "/feed=5"}, 2, "was written by rttlab place"},
		{[]string{"nosuch"}, 2, `unknown command "nosuch"`},
		{[]string{"report"}, 2, "accepts 1 arg(s), received 0"},
		{[]string{"compare", "a"}, 2, "accepts 2 arg(s)"},
		{[]string{"up"}, 2, "accepts 1 arg(s)"},
		{[]string{"run", "extra"}, 2, "takes no arguments, got \"extra\""},
		{[]string{"run", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"--log-level", "loud", "apps", "list"}, 2, `--log-level "loud"`},
		{[]string{"run", "--plan", "smoke", "--delays", "0,2000"}, 2, "exceeds 1 s"},
		{[]string{"verify", "cobol"}, 2, `unknown app "cobol"`},
		{[]string{"report", "/nonexistent/folder"}, 2, "/nonexistent/folder: no such folder: give a results folder"},
		{[]string{"report", empty}, 2, empty + " is not a results folder (it has no manifest.json)"},
		{[]string{"report", "/dev/null"}, 2, "/dev/null is not a folder"},
		{[]string{"report", noSamples}, 1, "samples.jsonl holds no sample of a done task (12 of 12 tasks done): nothing to report, nothing written"},
		{[]string{"compare", folder, empty}, 2, "is not a results folder"},
		{[]string{"compare", folder, folder + "/."}, 2, "are the same folder: compare two runs"},
		{[]string{"clean"}, 1, errNoEngineHere.Error()},
		{[]string{"trace", "go", "--results", "nope"}, 2, "nope: no such folder: give a results folder"},
		{[]string{"trace", "go", "--out", empty}, 2, "is not a results folder"},
		{[]string{"images", "build", "django"}, 2, `unknown app "django"`},
		{[]string{"images", "build", "postgres", "agent", "go"}, 1, errNoEngineHere.Error()},
		{[]string{"clean", "--run", ""}, 2, `--run "" is not a run id: give the id in a container's name`},
		{[]string{"clean", "--run", "../x"}, 2, `--run "../x" is not a run id`},
		{[]string{"clean", "--run", "3f9c0a1b2d"}, 1, errNoEngineHere.Error()},
		{[]string{"run", "--runs", "ten"}, 2, `--runs "ten" is not a whole number`},
		{[]string{"run", "--seed", "99999999999999999999999"}, 2, `--seed "99999999999999999999999" is too large`},
		{[]string{"shape", "sett", "--rtt", "1ms"}, 2, `unknown command "sett" for "rttlab shape" (did you mean set?)`},
		{[]string{"run", "--plan", "smoke", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x": rttlab builds and runs linux/amd64 and linux/arm64`},
		{[]string{"run", "--resume", folder, "--platform", "linux/arm46"}, 2, `--platform "linux/arm46": rttlab builds and runs`},
		{[]string{"images", "base", "--platform", "s390x"}, 2, `--platform "s390x": rttlab builds and runs`},
		{[]string{"images", "build", "go", "--platform", "linux/riscv64"}, 2, `--platform "linux/riscv64": rttlab builds and runs`},
		{[]string{"up", "go", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x"`},
		{[]string{"verify", "go", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x"`},
		{[]string{"trace", "go", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x"`},
		{[]string{"shape", "verify", "go", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x"`},
		{[]string{"place", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x"`},
		{[]string{"workers", "--platform", "linux/s390x"}, 2, `--platform "linux/s390x"`},
		// Good flags reach the engine.
		{[]string{"place", "--plan", "placement-smoke", "--repeat", "2", "--seed", "5", "--keep-alive", "on"}, 1, errNoEngineHere.Error()},
		{[]string{"place", "--plan", filepath.Join(empty, "none.yaml")}, 2, "none.yaml"},
	}
	for _, c := range cases {
		code, out, errs := execLine(ctx, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", c.args, code, errs, c.code, c.want)
			continue
		}
		if code != 0 && (strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "rttlab: ")) {
			t.Errorf("%v: stderr is not one line: %q", c.args, errs)
		}
		for _, internal := range []string{"strconv.", "bufio.", "json: cannot", "Go struct", "\\x00"} {
			if strings.Contains(errs, internal) {
				t.Errorf("%v: Go's words reach the user: %q", c.args, errs)
			}
		}
		if code == 0 && !strings.Contains(out, version) {
			t.Errorf("%v: %q", c.args, out)
		}
	}
}

// Ctrl-C: exit status 130; the message says everything was removed only
// when it was.
func TestExitCodeInterrupted(t *testing.T) {
	saved := connect
	defer func() { connect = saved }()
	connect = func(ctx context.Context) (*engine.Runtime, error) { return nil, ctx.Err() }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, errs := execLine(ctx, "shape", "show")
	if code != 130 || errs != "rttlab: interrupted; everything this command started was removed\n" {
		t.Errorf("exit %d, %q", code, errs)
	}
	connect = func(ctx context.Context) (*engine.Runtime, error) {
		return nil, errors.Join(context.Canceled, fmt.Errorf("%w: remove rttlab-x-db: busy", stack.ErrCleanup))
	}
	code, _, errs = execLine(context.Background(), "clean")
	if code != 130 || !strings.Contains(errs, "interrupted: ") || !strings.Contains(errs, "busy") || strings.Contains(errs, "everything") {
		t.Errorf("exit %d, %q", code, errs)
	}
}

// report regenerates everything from the raw files of a results folder;
// the 0.5 ms cell of a 3-statement route changes by about 1.5 ms.
func TestReportOnResultsFolder(t *testing.T) {
	dir := testFolder(t)
	out, err := run(t, "report", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.md", "summary.json", "runs.csv", "report.html", filepath.Join("plots", "change.svg")} {
		if !strings.Contains(out, "wrote "+filepath.Join(dir, f)+"\n") {
			t.Errorf("output does not list %s:\n%s", f, out)
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Then the run's digest, from the summary just written, naming the
	// report page last.
	if !strings.Contains(out, "\nplan unit: 12 of 12 tasks done (seed 5)\n") || !strings.Contains(out, "delay: 0.5 ms verified\n") ||
		!strings.HasSuffix(out, "report:  "+filepath.Join(dir, "report.html")+"\n") {
		t.Errorf("no digest, or not the report page last: %q", out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "| /feed | 0.5 ms | 6 |") || !strings.Contains(string(md), "(predicted +1.50)") || !strings.Contains(string(md), "12 of 12 tasks done") {
		t.Errorf("summary.md:\n%s", md)
	}
	// A malformed line is named, and nothing is rewritten.
	before, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	f, _ := os.OpenFile(filepath.Join(dir, "samples.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{not json}\n")
	f.Close()
	if _, err := run(t, "report", dir); err == nil || !strings.Contains(err.Error(), "samples.jsonl:145") {
		t.Errorf("malformed line: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !bytes.Equal(before, after) {
		t.Error("summary.md changed after a failed report")
	}
}

func TestCompareFolders(t *testing.T) {
	a, b := testFolder(t), testFolder(t)
	out, err := run(t, "compare", a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "go") || !strings.Contains(out, "/feed") || !strings.Contains(out, "0.5") {
		t.Errorf("compare:\n%s", out)
	}
	if _, err := run(t, "compare", a, t.TempDir()); err == nil {
		t.Error("compare with an empty folder")
	}
}

func TestAppsListWithoutEngine(t *testing.T) {
	out, err := run(t, "apps", "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "APP") {
		t.Fatalf("header %q", lines[0])
	}
	var names []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		names = append(names, f[0])
		if !strings.Contains(l, "unknown (no engine)") {
			t.Errorf("line %q", l)
		}
	}
	for _, want := range []string{"go", "axum-raw", "redmine"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s missing from %v", want, names)
		}
	}
	if !strings.Contains(out, "/feed(3) /feed-naive(12) /serial(n)") {
		t.Errorf("statements per route missing:\n%s", out)
	}
}

func TestAppsNewScaffolds(t *testing.T) {
	// An apps folder holding the template (the checkout's is not written).
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "node"), os.DirFS(filepath.Join("..", "..", "apps", "node"))); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "apps", "new", "myapp", "--from", "node", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "created "+filepath.Join(dir, "myapp", "app.yaml")+"\n") || !strings.Contains(out, "next: edit "+filepath.Join(dir, "myapp")+" ") {
		t.Errorf("output %q", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "myapp", "app.yaml"))
	if err != nil || !strings.Contains(string(data), "name: myapp") {
		t.Fatalf("app.yaml: %v\n%s", err, data)
	}
	if _, err := run(t, "apps", "new", "myapp", "--from", "node", "--dir", dir); err == nil {
		t.Error("scaffolding over an existing folder")
	}
}

// run's flags override the plan and everything is validated before the
// engine is reached (here: the test's stand-in that refuses).
func TestRunFlagsValidatedBeforeEngine(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("name: mine\ndelays_ms: [0, 1]\nruns: 2\nrequests: 5\napps:\n  - name: go\n    routes: [/feed]\n  - name: redmine\n    mix: redmine\n    runs: 1\n"), 0o644)
	outDir := filepath.Join(dir, "out")
	ok := [][]string{
		{"run", "--plan", plan, "--out", outDir},
		{"run", "--plan", plan, "--apps", "go,node", "--routes", "/feed,/feed-naive", "--delays", "0,0.25", "--runs", "6",
			"--requests", "10", "--warmup", "0", "--seed", "9", "--shaper", "kernel", "--scope", "interface", "--out", outDir},
		{"run", "--resume", testFolder(t), "--out", outDir},
	}
	for _, args := range ok {
		if _, err := run(t, args...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", args, err)
		}
	}
	if _, err := os.Stat(outDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a results folder was created without an engine: %v", err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--plan", plan, "--routes", "/nope"}, "route /nope is unknown"},
		{[]string{"run", "--plan", plan, "--apps", "go", "--requests", "0"}, "requests 0 must be positive"},
		{[]string{"run", "--plan", plan, "--warmup", "-1"}, "warmup -1"},
		{[]string{"run", "--plan", plan, "--shaper", "tc"}, `shaper "tc"`},
		{[]string{"run", "--plan", plan, "--scope", "all"}, `scope "all"`},
		{[]string{"run", "--plan", plan, "--delays", "0,0.0001"}, "finer than 1 µs"},
		{[]string{"run", "--resume", "x", "--apps", "go"}, "drop --apps"},
	}
	for _, c := range bad {
		_, err := run(t, c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// The commands that need an engine check their input first; bad input is
// a usage error before any connection.
func TestEngineCommandsCheckInputFirst(t *testing.T) {
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"up", "go", "--shaper", "tc"}, "--shaper"},
		{[]string{"up", "go", "--scope", "all"}, "--scope"},
		{[]string{"up", "go", "--rtt", "5000"}, "--rtt"},
		{[]string{"up", "cobol"}, "unknown app"},
		{[]string{"verify", "--serial-n", "0", "go"}, "--serial-n"},
		{[]string{"trace", "go", "--requests", "0"}, "--requests"},
		{[]string{"trace", "cobol"}, "unknown app"},
		{[]string{"shape", "set", "--rtt", "1ms", "--scope", "all"}, "--scope"},
		{[]string{"shape", "verify", "go", "--tolerance", "-1"}, "--tolerance"},
		{[]string{"shape", "verify", "go", "--shaper", "tc"}, "shaper"},
		{[]string{"shape", "verify", "cobol"}, "unknown app"},
	}
	for _, c := range bad {
		_, err := run(t, c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	for _, args := range [][]string{
		{"up", "go", "--rtt", "0.5ms"}, {"down"}, {"down", "--run", "abc"}, {"clean", "--images"}, {"verify", "go"},
		{"trace", "redmine"}, {"shape", "set", "--rtt", "1ms"}, {"shape", "show"}, {"shape", "clear"},
		{"shape", "verify", "go", "--delays", "0,0.5"}, {"images", "base"}, {"images", "build", "go"},
	} {
		if _, err := run(t, args...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", args, err)
		}
	}
}

// agent load against an HTTP server: one JSON line per request in the
// format the runner decodes, totals on stderr, headers sent.
func TestAgentLoad(t *testing.T) {
	var mu sync.Mutex
	var paths, keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.RequestURI())
		keys = append(keys, r.Header.Get("X-Key"))
		mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	code, out, errs := execLine(context.Background(), "agent", "load", "--url", srv.URL, "--route", "/feed", "--requests", "3", "--warmup", "1", "--header", "X-Key: k1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rs, err := workloads.DecodeResults(strings.NewReader(out))
	if err != nil || len(rs) != 4 {
		t.Fatalf("results %v %v", rs, err)
	}
	for i, r := range rs {
		if r.Seq != i || r.Warmup != (i == 0) || r.Status != 200 || r.Path != "/feed" || r.LatencyNS <= 0 {
			t.Errorf("result %+v", r)
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(errs), "{") || !json.Valid([]byte(strings.TrimSpace(errs))) {
		t.Errorf("totals %q", errs)
	}
	if len(keys) != 4 || keys[0] != "k1" {
		t.Errorf("headers %v", keys)
	}

	// A mix: the seed's request sequence.
	mu.Lock()
	paths = nil
	mu.Unlock()
	code, out, errs = execLine(context.Background(), "agent", "load", "--url", srv.URL, "--mix", "redmine", "--seed", "3", "--requests", "5", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	seq, _ := workloads.Sequence(workloads.RedmineMix(), 3, 5)
	if want := workloads.Paths(seq); !slices.Equal(paths, want) {
		t.Errorf("mix paths %v, want %v", paths, want)
	}
	rs, _ = workloads.DecodeResults(strings.NewReader(out))
	if len(rs) != 5 {
		t.Errorf("%d mix results", len(rs))
	}

	// A user's mix given as JSON: the seed's sequence, each request with
	// its method, headers and body.
	mu.Lock()
	paths, keys = nil, nil
	mu.Unlock()
	mixJSON := `[{"name":"list","path":"/api/items","weight":6},{"name":"create","method":"POST","path":"/api/items?new=1","headers":{"X-Key":"k2"},"body":"{}","weight":1}]`
	code, out, errs = execLine(context.Background(), "agent", "load", "--url", srv.URL, "--mix-json", mixJSON, "--seed", "3", "--requests", "20", "--warmup", "2")
	if code != 0 {
		t.Fatalf("--mix-json: exit %d: %s", code, errs)
	}
	var reqs []workloads.MixRequest
	json.Unmarshal([]byte(mixJSON), &reqs)
	m, _ := workloads.RequestMix("shop", reqs)
	seq, _ = workloads.Sequence(m, 3, 22)
	if want := workloads.Paths(seq); !slices.Equal(paths, want) {
		t.Errorf("--mix-json paths %v, want %v", paths, want)
	}
	for i, q := range seq {
		if want := map[string]string{"list": "", "create": "k2"}[q.Type]; keys[i] != want {
			t.Errorf("request %d (%s): X-Key %q", i, q.Type, keys[i])
		}
	}
	if rs, _ = workloads.DecodeResults(strings.NewReader(out)); len(rs) != 22 {
		t.Errorf("%d --mix-json results", len(rs))
	}

	// An explicit request list, warmup first.
	code, out, errs = execLine(context.Background(), "agent", "load", "--url", srv.URL, "--warmup", "1", "--path", "/a", "--path", "/b?x=1", "--path", "/c")
	if code != 0 {
		t.Fatalf("--path: exit %d: %s", code, errs)
	}
	rs, _ = workloads.DecodeResults(strings.NewReader(out))
	if len(rs) != 3 || !rs[0].Warmup || rs[1].Warmup || rs[1].Path != "/b?x=1" || rs[2].Path != "/c" {
		t.Errorf("--path results %+v", rs)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--route", "/feed"}, "--url is required"},
		{[]string{"--url", srv.URL}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", srv.URL, "--route", "/a", "--mix", "redmine"}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", srv.URL, "--route", "/a", "--path", "/b"}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", srv.URL, "--path", "/a", "--warmup", "1"}, "leave none to measure"},
		{[]string{"--url", srv.URL, "--route", "/a", "--requests", "0"}, "--requests must be positive"},
		{[]string{"--url", srv.URL, "--route", "/a", "--header", "nocolon"}, "--header"},
		{[]string{"--url", srv.URL, "--mix", "shop"}, `--mix "shop"`},
		{[]string{"--url", srv.URL, "--mix", "redmine", "--mix-json", "[]"}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", srv.URL, "--mix-json", "[]"}, "--mix-json: mix \"request_mix\": request_mix has no requests"},
		{[]string{"--url", srv.URL, "--mix-json", `[{"name":"a","path":"/a","weight":1,"verb":"GET"}]`}, `--mix-json: json: unknown field "verb"`},
	} {
		code, _, errs := execLine(context.Background(), append([]string{"agent", "load"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", c.args, code, errs, c.want)
		}
	}
}

// The agent commands that need privileges or a peer fail cleanly here,
// and check their input first.
func TestAgentCommandsInput(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "serve", "--shaper", "tc"}, `--shaper "tc"`},
		{[]string{"agent", "serve", "--queue", "70000"}, "--queue 70000"},
		{[]string{"agent", "ctl", "bogus"}, `ctl "bogus"`},
		{[]string{"agent", "ctl", "set", "--delay", "5h"}, "unit"},
		{[]string{"agent", "ping", "--to", "db"}, "not an IP address"},
		{[]string{"agent", "ping", "--to", "10.0.0.1", "--count", "0"}, "--count 0"},
		{[]string{"agent", "ping", "--to", "10.0.0.1", "--interval", "-1s"}, "--interval"},
		{[]string{"agent", "sqlprobe", "--runs", "0"}, "--runs"},
		{[]string{"agent", "trace", "--db", "db:5432"}, "--db"},
		{[]string{"agent", "trace", "--db", "10.0.0.2:5432", "--header", "x"}, "--header"},
	} {
		code, _, errs := execLine(ctx, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", c.args, code, errs, c.want)
		}
	}

	// ctl with no agent listening: the reply is still printed as JSON.
	sock := filepath.Join(t.TempDir(), "none.sock")
	code, out, errs := execLine(ctx, "agent", "ctl", "show", "--socket", sock)
	var rep netem.Reply
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || !strings.Contains(errs, "none.sock") {
		t.Errorf("ctl: exit %d, out %q, err %q", code, out, errs)
	}
	// sqlprobe with nothing listening.
	code, _, errs = execLine(ctx, "agent", "sqlprobe", "--dsn", "postgres://rttlab@127.0.0.1:1/rttlab?sslmode=disable&connect_timeout=5", "--runs", "1", "--calls", "1")
	if code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("sqlprobe: exit %d %q", code, errs)
	}
	// trace: requests are read before the capture opens.
	cmd := newRootCmd()
	cmd.SetArgs([]string{"agent", "trace", "--db", "10.0.0.2:5432"})
	cmd.SetIn(strings.NewReader(`{"type":"/feed","path":"/feed"}` + "\n{oops\n"))
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "request 2 on stdin") {
		t.Errorf("trace stdin: %v", err)
	}
	cmd = newRootCmd()
	cmd.SetArgs([]string{"agent", "trace", "--db", "10.0.0.2:5432", "--iface", "rttlab-none0"})
	cmd.SetIn(strings.NewReader(`{"type":"/feed","path":"/feed"}` + "\n"))
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "rttlab-none0") {
		t.Errorf("trace iface: %v", err)
	}
	// idle returns when stopped.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if code, _, errs := execLine(cctx, "agent", "idle"); code != 0 {
		t.Errorf("idle: %d %s", code, errs)
	}
}

func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.Start(10, 4)
	p.Note("go: starting PostgreSQL")
	p.Task(5, 10, "go /feed at 0.5 ms, run 2")
	p.Finish()
	want := []string{"10 tasks, 4 already done", "go: starting PostgreSQL", "[5/10] go /feed at 0.5 ms, run 2 (elapsed 0s)"}
	if got := strings.Split(strings.TrimSpace(b.String()), "\n"); !slices.Equal(got, want) {
		t.Errorf("progress %q", got)
	}
}

func TestPrintStack(t *testing.T) {
	all, _, _, err := appsTree()
	if err != nil {
		t.Fatal(err)
	}
	tg, _ := apps.Resolve(all, "go")
	st := &stack.Stack{RunID: "abc", Target: tg, Network: "rttlab-abc", DB: stack.DBCredentials{User: "rttlab", Database: "rttlab", Password: "pw", Super: "postgres"}, AppURL: "http://127.0.0.1:3456", AppAddr: "10.0.0.3:8080",
		Members: []*stack.Member{{Role: "db", Name: "rttlab-abc-db", IP: "10.0.0.2"}, {Role: "app", Name: "rttlab-abc-app", IP: "10.0.0.3"}}}
	var b bytes.Buffer
	printStack(&b, st)
	for _, want := range []string{"stack abc is up (network rttlab-abc)", "curl -s http://127.0.0.1:3456/serial?n=5", "password pw", "docker logs rttlab-abc-app", "rttlab down --run abc"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

func TestHelpers(t *testing.T) {
	all, _, _, err := appsTree()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := resolveTargets(all, []string{"go,node", "", "axum-raw"})
	if err != nil || len(ts) != 3 || ts[2].Variant != "raw" {
		t.Fatalf("targets %+v %v", ts, err)
	}
	if got := imagesFor(ts, true); !slices.Equal(got, []string{"postgres", "agent", "go", "node", "axum"}) {
		t.Errorf("images %v", got)
	}
	if got := imagesFor(ts[:1], false); !slices.Equal(got, []string{"postgres", "go"}) {
		t.Errorf("images %v", got)
	}
	if every, _ := resolveTargets(all, nil); len(every) < 6 {
		t.Errorf("all targets: %d", len(every))
	}
	if _, err := loadTarget("cobol"); err == nil {
		t.Error("loadTarget(cobol)")
	}
	if shortID("sha256:0123456789abcdef") != "0123456789ab" || shortID("abc") != "abc" {
		t.Error("shortID")
	}
	if got := slices.Sorted(maps.Keys(map[string]int{"b": 1, "a": 2})); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("sortedKeys %v", got)
	}
	if dash("") != "-" || dash("x") != "x" {
		t.Error("dash")
	}
	if netem.Ms(1500*time.Microsecond) != 1.5 {
		t.Error("ms")
	}
	if !fileExists("testdata") || fileExists("testdata/nope") {
		t.Error("fileExists")
	}
	saved := commit
	commit = "abc1234"
	defer func() { commit = saved }()
	if versionString() != version+" (abc1234)" {
		t.Errorf("version %q", versionString())
	}
}

// Outside a checkout, apps new writes nothing unless --dir says where.
func TestAppsNewOutsideCheckout(t *testing.T) {
	t.Setenv("RTTLAB_SRC", "")
	t.Chdir(t.TempDir())
	code, out, errs := execLine(context.Background(), "apps", "new", "myfw")
	if code != 2 || !strings.Contains(errs, "or pass --dir") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and a refusal naming --dir", code, out, errs)
	}
	if _, err := os.Stat("apps"); err == nil {
		t.Error("apps new wrote into the working folder")
	}
}

// Before a run starts it says what it is in for: the plan, its tasks and
// the estimated wall time; off a terminal it asks nothing.
func TestRunSaysItsSizeFirst(t *testing.T) {
	code, _, errs := execLine(context.Background(), "run", "--plan", "study", "--apps", "go", "--delays", "0,1", "--runs", "3")
	if code != 1 || !strings.HasPrefix(errs, "plan study: 9 tasks (1 app, 2 settings and unshaped), ") || !strings.Contains(errs, errNoEngineHere.Error()) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if strings.Contains(errs, "[y/N]") {
		t.Error("asked on a stdin that is not a terminal")
	}
}

// A line cut by a crash is tolerated, and said on the console as well as
// in the summary.
func TestReportSaysWhatItTolerated(t *testing.T) {
	dir := testFolder(t)
	f, err := os.OpenFile(filepath.Join(dir, "samples.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"task":1,"attempt":1,"app":"go"`)
	f.Close()
	code, _, errs := execLine(context.Background(), "report", dir)
	if code != 0 || !strings.Contains(errs, "warning: samples.jsonl:") || !strings.Contains(errs, "incomplete last line") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "incomplete last line") {
		t.Error("summary.md does not say what was tolerated")
	}
}

// report --p50-target turns the fit of a route into the RTT that meets a
// p50; a route with no fit is refused before anything is written.
func TestReportP50Target(t *testing.T) {
	dir := testFolder(t)
	code, out, errs := execLine(context.Background(), "report", dir, "--p50-target", "/feed=2")
	if code != 0 || !regexp.MustCompile(`go /feed: p50 ≤ 2 ms up to an RTT of [0-9.]+ ms \[[0-9.]+, [0-9.]+\]`).MatchString(out) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	fresh := testFolder(t)
	code, _, errs = execLine(context.Background(), "report", fresh, "--p50-target", "/nope=2")
	if code != 2 || !strings.Contains(errs, "no fit for route /nope (routes fitted: /feed") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(fresh, "summary.md")); err == nil {
		t.Error("a refused target still wrote the report")
	}
	if r, ms, err := parseTarget("/items?page=2=5"); err != nil || r != "/items?page=2" || ms != 5 {
		t.Errorf("a route with '=' in its query: %q %v %v", r, ms, err)
	}
	code, _, errs = execLine(context.Background(), "report", fresh, "--p50-target", "/feed=fast")
	if code != 2 || !strings.Contains(errs, `write ROUTE=MS, e.g. /feed=5`) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
