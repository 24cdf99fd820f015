package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

// Stacks without agents on the fake lab: StartStack directly, as `rttlab
// up` and the studies start theirs before any shaping.

// started starts a stack on the lab and removes it when the test ends;
// the test fails when it does not start.
func started(t *testing.T, l *fakelab.Lab, o StackOptions) *Stack {
	t.Helper()
	st, err := StartStack(context.Background(), engine.NewLab(l, ""), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Remove(context.Background(), engine.NewLab(l, "")) })
	return st
}

// specsByService maps the compose service of each container created so
// far, helpers left out, to its spec.
func specsByService(l *fakelab.Lab) map[string]engine.ContainerSpec {
	out := map[string]engine.ContainerSpec{}
	for _, c := range l.Created() {
		out[c.Labels[engine.LabelService]] = c
	}
	return out
}

// A built-in app's stack: the database and then the app, each named and
// labelled after the run on the run's private network, the app wired to
// the database with the stack's fresh password.
func TestStartStackBuiltInApp(t *testing.T) {
	l := fakelab.New(t)
	st := started(t, l, StackOptions{RunID: "r1", Target: l.Target("go")})
	var got []string
	for _, m := range st.Members {
		got = append(got, fmt.Sprintf("%s %s %s %v", m.Service, m.Role, m.Name, m.Shaped))
	}
	if want := []string{"db db rttlab-r1-db true", "app app rttlab-r1-app true"}; !slices.Equal(got, want) {
		t.Fatalf("members %q, want %q", got, want)
	}
	if st.Network != "rttlab-r1" || st.NetworkID == "" || st.DB != RttlabDB(st.DB.Password) || len(st.DB.Password) != 36 {
		t.Errorf("network %q (%q), credentials %+v", st.Network, st.NetworkID, st.DB)
	}
	specs := specsByService(l)
	for svc, c := range specs {
		if c.Labels[engine.LabelRun] != "r1" || c.Labels[engine.LabelRole] != svc || c.Network != st.Network || !slices.Equal(c.Aliases, []string{svc}) {
			t.Errorf("%s: labels %v, network %s, aliases %v", svc, c.Labels, c.Network, c.Aliases)
		}
	}
	app, db := specs["app"], specs["db"]
	if app.Image != engine.ImageRef("go") || app.Labels[engine.LabelApp] != "go" || db.Image != engine.ImageRef("postgres") || len(app.PublishLocal) != 0 {
		t.Errorf("app %s %v published %v, db %s", app.Image, app.Labels, app.PublishLocal, db.Image)
	}
	pw := st.DB.Password
	for _, kv := range []string{"PGPASSWORD=" + pw, "DATABASE_URL=postgres://rttlab:" + pw + "@db:5432/rttlab?sslmode=disable",
		fmt.Sprintf("PORT=%d", l.Target("go").Meta.Port), "PGHOST=db"} {
		if !slices.Contains(app.Env, kv) {
			t.Errorf("app env %v lacks %s", app.Env, kv)
		}
	}
	if !slices.IsSorted(app.Env) || !slices.Equal(db.Env, []string{"RTTLAB_DB_PASSWORD=" + pw}) {
		t.Errorf("app env %v (sorted?), db env %v", app.Env, db.Env)
	}
	ns, _ := l.ListNetworks(context.Background(), map[string]string{engine.LabelRun: "r1"})
	if len(ns) != 1 || ns[0].Labels[LabelOwner] == "" || ns[0].Labels[engine.LabelStack] != "" {
		t.Errorf("networks %+v", ns)
	}
}

// A stack is ready when it returns: the database answered pg_isready in
// its container before the app started, and the app answers on its
// private address, which BaseURL gives while nothing is published.
func TestStartStackReadiness(t *testing.T) {
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	calls := l.Calls()
	ready := slices.Index(calls, "Exec pg_isready -q -h 127.0.0.1 -d rttlab")
	app := slices.Index(calls, "CreateContainer rttlab-"+st.RunID+"-app")
	if len(st.RunID) != 10 || ready < 0 || app < ready || l.Execs()[0].Container != st.Role("db").Name {
		t.Errorf("run %q: pg_isready at call %d, the app created at %d: %q", st.RunID, ready, app, calls)
	}
	if st.AppURL != "" || st.BaseURL() != "http://"+st.AppAddr || st.AppAddr != fmt.Sprintf("127.0.0.1:%d", l.Target("go").Meta.Port) {
		t.Errorf("app URL %q, address %q, base %q", st.AppURL, st.AppAddr, st.BaseURL())
	}
	if db := st.Role("db"); db == nil || db.IP == "" || db.ID == "" || st.Role("app").IP != "127.0.0.1" || st.Role("agent") != nil {
		t.Errorf("roles: db %+v app %+v", db, st.Role("app"))
	}
	resp, err := http.Get(st.BaseURL() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("health %s", resp.Status)
	}
}

// `rttlab up` publishes the app on 127.0.0.1 and labels the network and
// every member as an up stack.
func TestStartStackPublishedUp(t *testing.T) {
	l := fakelab.New(t)
	tg := l.Target("go")
	st := started(t, l, StackOptions{Target: tg, Up: true, Publish: true})
	if st.AppURL != "http://127.0.0.1:"+l.HostPort || st.BaseURL() != st.AppURL {
		t.Errorf("app URL %q, base %q", st.AppURL, st.BaseURL())
	}
	for svc, c := range specsByService(l) {
		published := svc == "app"
		if c.Labels[engine.LabelStack] != "up" || (len(c.PublishLocal) == 1) != published {
			t.Errorf("%s: labels %v, published %v", svc, c.Labels, c.PublishLocal)
		}
	}
	if p := specsByService(l)["app"].PublishLocal; p[0] != fmt.Sprintf("%d/tcp", tg.Meta.Port) {
		t.Errorf("published %v", p)
	}
	ns, _ := l.ListNetworks(context.Background(), map[string]string{engine.LabelStack: "up"})
	if len(ns) != 1 || ns[0].Name != st.Network {
		t.Errorf("up networks %+v", ns)
	}
}

// Removing a stack leaves nothing of it on the engine, and nothing of
// another run.
func TestStackRemoveLeavesNothing(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	a := started(t, l, StackOptions{Target: l.Target("go")})
	b := started(t, l, StackOptions{Target: l.Target("node")})
	if err := a.Remove(ctx, engine.NewLab(l, "")); err != nil {
		t.Fatal(err)
	}
	cs, ns := l.Live()
	if !slices.Equal(cs, []string{b.Role("db").Name, b.Role("app").Name}) || !slices.Equal(ns, []string{b.Network}) {
		t.Errorf("left %v %v, want only run %s", cs, ns, b.RunID)
	}
	if err := b.Remove(ctx, engine.NewLab(l, "")); err != nil {
		t.Fatal(err)
	}
	l.RequireEmpty(t)
	if err := b.Remove(ctx, engine.NewLab(l, "")); err != nil {
		t.Errorf("removing a removed stack: %v", err)
	}
}

// FeedServiceEnv is a feed stack service's environment for the stack's
// password, with the target's environment added to the app's.
func TestFeedServiceEnv(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	tg := l.Target("axum-raw")
	tg.Env["PGUSER"] = "other"
	st := &Stack{RunID: "r1", Target: tg, DB: RttlabDB("pw1")}
	db, err := FeedServiceEnv(ctx, st, "db")
	if err != nil || !slices.Equal(db, []string{"RTTLAB_DB_PASSWORD=pw1"}) {
		t.Errorf("db env %q %v", db, err)
	}
	app, err := FeedServiceEnv(ctx, st, "app")
	if err != nil || !slices.IsSorted(app) {
		t.Fatalf("app env %q %v", app, err)
	}
	for _, kv := range []string{"PGPASSWORD=pw1", "PGUSER=other", "PGHOST=db", "RTTLAB_AXUM_MODE=raw"} {
		if !slices.Contains(app, kv) {
			t.Errorf("app env %q lacks %s", app, kv)
		}
	}
	if slices.Contains(app, "PGUSER=rttlab") {
		t.Errorf("the target's PGUSER did not win: %q", app)
	}
	if _, err := FeedServiceEnv(ctx, st, "cache"); err == nil {
		t.Error("a service the feed stack lacks")
	}
}

// WaitHTTP waits for a member's URL to answer 200, says what it last got
// when it does not, and stops at once when the member stops.
func TestWaitHTTP(t *testing.T) {
	ctx := context.Background()
	l := fakelab.New(t)
	st := started(t, l, StackOptions{Target: l.Target("go")})
	app := st.Role("app")
	if err := WaitHTTP(ctx, engine.NewLab(l, ""), app, st.BaseURL()+"/health", time.Minute); err != nil {
		t.Fatal(err)
	}
	url := st.BaseURL() + "/nope"
	if err := WaitHTTP(ctx, engine.NewLab(l, ""), app, url, 100*time.Millisecond); err == nil || err.Error() != app.Name+" did not answer "+url+" with 200 within 100ms (last: 404 Not Found)" {
		t.Errorf("404: %v", err)
	}
	l.Exit("-app", 137, "killed\n")
	if err := WaitHTTP(ctx, engine.NewLab(l, ""), app, url, time.Minute); !errors.Is(err, ErrContainerExited) || !strings.Contains(err.Error(), "(exit code 137); last log lines:\n    killed") {
		t.Errorf("stopped: %v", err)
	}
}
