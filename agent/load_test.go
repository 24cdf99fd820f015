package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rttlab/rttlab/workloads"
)

// seenRequest is what the test app got of one request.
type seenRequest struct {
	method, path, header, body string
}

// testApp is an HTTP app that keeps every request it gets: /fail answers
// 500, /slow answers once the client gives up, anything else 200.
type testApp struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func startTestApp(t *testing.T) *testApp {
	t.Helper()
	a := &testApp{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.seen = append(a.seen, seenRequest{r.Method, r.URL.RequestURI(), r.Header.Get("X-Test"), string(body)})
		a.mu.Unlock()
		switch r.URL.Path {
		case "/fail":
			http.Error(w, "no", http.StatusInternalServerError)
		case "/slow":
			<-r.Context().Done()
		default:
			w.Write([]byte("ok"))
		}
	}))
	t.Cleanup(a.Close)
	return a
}

// requests returns what the app got so far.
func (a *testApp) requests() []seenRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]seenRequest(nil), a.seen...)
}

// runLoad runs `agent load` against the app and decodes its results
// (stdout) and totals (the last line on stderr).
func runLoad(t *testing.T, args ...string) (int, []workloads.Result, workloads.Totals, string) {
	t.Helper()
	return runLoadCtx(t, context.Background(), args...)
}

// runLoadCtx is runLoad under ctx.
func runLoadCtx(t *testing.T, ctx context.Context, args ...string) (int, []workloads.Result, workloads.Totals, string) {
	t.Helper()
	code, out, errs := execLine(ctx, append([]string{"agent", "load"}, args...)...)
	rs, err := workloads.DecodeResults(strings.NewReader(out))
	if err != nil {
		t.Errorf("%v: results %q: %v", args, out, err)
	}
	var tot workloads.Totals
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 2 {
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tot); err != nil {
			t.Errorf("%v: totals in %q: %v", args, errs, err)
		}
	}
	return code, rs, tot, errs
}

// resultPaths lists the results' paths in order.
func resultPaths(rs []workloads.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

// --route sends WARMUP then REQUESTS GETs of one path with the --header
// headers; each is one result line, the warmup ones marked, and the
// totals count them.
func TestAgentLoadRoute(t *testing.T) {
	app := startTestApp(t)
	code, rs, tot, errs := runLoad(t, "--url", app.URL, "--route", "/r?x=1", "--requests", "3", "--warmup", "2", "--header", "X-Test: a")
	if code != 0 || len(rs) != 5 {
		t.Fatalf("exit %d, %d results: %s", code, len(rs), errs)
	}
	for i, r := range rs {
		if r.Seq != i || r.Warmup != (i < 2) || r.Path != "/r?x=1" || r.Status != 200 || r.Failed() || r.Bytes != 2 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if tot.Requests != 5 || tot.Warmup != 2 || tot.Measured != 3 || tot.Failures != 0 || tot.Bytes != 10 {
		t.Errorf("totals %+v", tot)
	}
	want := seenRequest{"GET", "/r?x=1", "a", ""}
	for _, s := range app.requests() {
		if s != want {
			t.Errorf("the app got %+v, want %+v", s, want)
		}
	}
	if n := len(app.requests()); n != 5 {
		t.Errorf("the app got %d requests, want 5", n)
	}
}

// --path sends the paths in order, the first --warmup of them as warmup,
// whatever --requests says; a failed request is counted and printed, and
// the run goes on.
func TestAgentLoadPaths(t *testing.T) {
	app := startTestApp(t)
	code, rs, tot, errs := runLoad(t, "--url", app.URL, "--path", "/a", "--path", "/fail", "--path", "/c", "--warmup", "1", "--requests", "50")
	if code != 0 || !reflect.DeepEqual(resultPaths(rs), []string{"/a", "/fail", "/c"}) {
		t.Fatalf("exit %d, results %+v: %s", code, rs, errs)
	}
	if !rs[0].Warmup || rs[1].Warmup || rs[1].Status != 500 || !rs[1].Failed() || rs[1].Error == "" || rs[2].Failed() {
		t.Errorf("results %+v", rs)
	}
	if tot.Requests != 3 || tot.Warmup != 1 || tot.Measured != 2 || tot.Failures != 1 || tot.MeasuredFailures != 1 {
		t.Errorf("totals %+v", tot)
	}
	var got []string
	for _, s := range app.requests() {
		got = append(got, s.path)
	}
	if !reflect.DeepEqual(got, []string{"/a", "/fail", "/c"}) {
		t.Errorf("the app got %v", got)
	}
}

// A built-in mix sends the mix's seeded sequence: the same paths as
// workloads.Sequence draws for the seed, warmup included.
func TestAgentLoadBuiltInMixes(t *testing.T) {
	aimeos, err := workloads.AimeosMix(workloads.AimeosOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mix  workloads.Mix
		seed uint64
	}{
		{"redmine", workloads.RedmineMix(), 7},
		{"aimeos", aimeos, 3},
	} {
		app := startTestApp(t)
		seq, err := workloads.Sequence(c.mix, c.seed, 6)
		if err != nil {
			t.Fatal(err)
		}
		code, rs, tot, errs := runLoad(t, "--url", app.URL, "--mix", c.name, "--seed", strconv.FormatUint(c.seed, 10), "--requests", "4", "--warmup", "2")
		if code != 0 || !reflect.DeepEqual(resultPaths(rs), workloads.Paths(seq)) {
			t.Errorf("%s: exit %d, paths %v, want %v: %s", c.name, code, resultPaths(rs), workloads.Paths(seq), errs)
		}
		if tot.Warmup != 2 || tot.Measured != 4 {
			t.Errorf("%s: totals %+v", c.name, tot)
		}
		for i, s := range app.requests() {
			if s.method != "GET" || s.path != seq[i].Path {
				t.Errorf("%s: request %d: the app got %+v, want GET %s", c.name, i, s, seq[i].Path)
			}
		}
	}
}

// A --mix-json mix sends its requests with their own method, headers and
// body.
func TestAgentLoadMixJSON(t *testing.T) {
	app := startTestApp(t)
	mix := `[{"name":"post","method":"post","path":"/p","headers":{"X-Test":"m"},"body":"x=1","weight":1}]`
	code, rs, tot, errs := runLoad(t, "--url", app.URL, "--mix-json", mix, "--requests", "2", "--warmup", "1", "--header", "X-Test: global")
	if code != 0 || len(rs) != 3 || tot.Requests != 3 || tot.Failures != 0 {
		t.Fatalf("exit %d, results %+v, totals %+v: %s", code, rs, tot, errs)
	}
	want := seenRequest{"POST", "/p", "m", "x=1"}
	got := app.requests()
	if len(got) != 3 {
		t.Fatalf("the app got %+v", got)
	}
	for _, s := range got {
		if s != want {
			t.Errorf("the app got %+v, want %+v", s, want)
		}
	}
}

// --new-conn opens a connection per request; --timeout ends a request the
// app does not answer, which is a failure, not the end of the run. The
// run's context outlasts --timeout by far but not the default timeout,
// so a --timeout left unused ends the run instead.
func TestAgentLoadConnAndTimeout(t *testing.T) {
	app := startTestApp(t)
	code, rs, tot, errs := runLoad(t, "--url", app.URL, "--route", "/n", "--requests", "3", "--warmup", "0", "--new-conn")
	if code != 0 || len(rs) != 3 || tot.NewConns != 3 {
		t.Errorf("new-conn: exit %d, %d results, totals %+v: %s", code, len(rs), tot, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), workloads.DefaultRequestTimeout/3)
	defer cancel()
	code, rs, tot, errs = runLoadCtx(t, ctx, "--url", app.URL, "--path", "/slow", "--path", "/ok", "--warmup", "0", "--timeout", "20ms")
	if code != 0 || len(rs) != 2 || rs[0].Error == "" || rs[1].Failed() || tot.Failures != 1 {
		t.Errorf("timeout: exit %d, results %+v, totals %+v: %s", code, rs, tot, errs)
	}
}

// Bad flags are a one-line usage error (exit 2) that names the flag, and
// nothing reaches the app.
func TestAgentLoadRefusesBadFlags(t *testing.T) {
	app := startTestApp(t)
	u := app.URL
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--route", "/r"}, "--url is required"},
		{[]string{"--url", u}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", u, "--route", "/r", "--mix", "redmine"}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", u, "--path", "/a", "--mix-json", "[]"}, "give one of --route, --mix, --mix-json or --path"},
		{[]string{"--url", u, "--path", "/a", "--path", "/b", "--warmup", "2"}, "2 --path requests leave none to measure after --warmup 2"},
		{[]string{"--url", u, "--path", "/a", "--warmup", "-1"}, "--requests must be positive and --warmup not negative"},
		{[]string{"--url", u, "--route", "/r", "--requests", "0"}, "--requests must be positive and --warmup not negative"},
		{[]string{"--url", u, "--route", "/r", "--warmup", "-1"}, "--requests must be positive and --warmup not negative"},
		{[]string{"--url", u, "--route", "/r", "--header", "X-Test"}, `--header "X-Test": use 'Name: value'`},
		{[]string{"--url", u, "--route", "/r", "--header", ": v"}, `--header ": v": use 'Name: value'`},
		{[]string{"--url", u, "--mix", "wordpress"}, `--mix "wordpress": use redmine or aimeos`},
		{[]string{"--url", u, "--mix-json", "{"}, "--mix-json: "},
		{[]string{"--url", u, "--mix-json", `[{"name":"a","path":"/a","weight":1,"colour":"red"}]`}, `--mix-json: json: unknown field "colour"`},
		{[]string{"--url", u, "--mix-json", `[{"name":"a","path":"a","weight":1}]`}, `path "a" must start with /`},
		{[]string{"--url", u, "--mix-json", `[{"name":"a","path":"/a","weight":0}]`}, "weight 0 must be a finite number above 0"},
		{[]string{"--url", u, "--mix-json", `[]`}, "--mix-json: "},
		{[]string{"--url", u, "--mix-json", `[{"name":"a","path":"/a","weight":1}] junk`}, "--mix-json: text after the JSON array of requests"},
		{[]string{"--url", u, "--mix-json", `[{"name":"a","path":"/a","weight":1}]]`}, "--mix-json: text after the JSON array of requests"},
	} {
		code, out, errs := execLine(context.Background(), append([]string{"agent", "load"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with %q", c.args, code, out, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: not one line: %q", c.args, errs)
		}
	}
	if got := app.requests(); len(got) != 0 {
		t.Errorf("the app got %+v", got)
	}
}

// An app address or a path the load client cannot use is bad input
// (exit 2), refused before any request is sent.
func TestAgentLoadRefusesBadTarget(t *testing.T) {
	app := startTestApp(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "ftp://" + strings.TrimPrefix(app.URL, "http://"), "--route", "/r"}, "scheme must be http or https"},
		{[]string{"--url", app.URL, "--route", "r"}, `--route or --path: path "r" must start with /`},
		{[]string{"--url", app.URL, "--path", "/a", "--path", "b", "--warmup", "0"}, `--route or --path: path "b" must start with /`},
		{[]string{"--url", app.URL + "/?q=1", "--route", "/r"}, "must not carry a query"},
	} {
		code, _, errs := execLine(context.Background(), append([]string{"agent", "load"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want a failure with %q", c.args, code, errs, c.want)
		}
	}
	if got := app.requests(); len(got) != 0 {
		t.Errorf("the app got %+v", got)
	}
}

// btoi counts a flag given as one.
func TestBtoi(t *testing.T) {
	if btoi(true) != 1 || btoi(false) != 0 {
		t.Error("btoi")
	}
}
