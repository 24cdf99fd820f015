package runtimefake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

func started(t *testing.T, r *Runtime, s runtime.MemberSpec) runtime.Member {
	t.Helper()
	m, err := r.StartMember(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A member gets an address and a namespace of its own; one beside it
// shares that namespace and has no address; both are recorded.
func TestStartMembers(t *testing.T) {
	r := New()
	r.AddImage("db:1")
	r.AddImage("agent:1")
	run := map[string]string{runtime.LabelRun: "abc"}
	db := started(t, r, runtime.MemberSpec{Name: "db", Role: "db", Image: "db:1", Labels: run})
	if db.ID == "" || db.Addr != "10.90.0.1" || db.NetNS == "" || db.Role != "db" {
		t.Errorf("db %+v", db)
	}
	a := started(t, r, runtime.MemberSpec{Name: "db-agent", Image: "agent:1", Labels: run, Beside: db.NetNS,
		CapAdd: []runtime.Capability{runtime.CapNetAdmin}})
	if a.Addr != "" || a.NetNS != db.NetNS {
		t.Errorf("agent %+v beside %+v", a, db)
	}
	if got := r.Started(); len(got) != 2 || got[1].Beside != db.NetNS || got[1].CapAdd[0] != runtime.CapNetAdmin {
		t.Errorf("started %+v", got)
	}
	r.Node = "node-1"
	pinned := started(t, r, runtime.MemberSpec{Name: "app", Image: "db:1", Node: "node-2"})
	free := started(t, r, runtime.MemberSpec{Name: "client", Image: "db:1"})
	if pinned.Node != "node-2" || free.Node != "node-1" || r.Started()[2].Node != "node-2" {
		t.Errorf("pinned %+v, free %+v: want node-2 and the fake's node-1", pinned, free)
	}
	run["x"] = "y"
	if r.Started()[0].Labels["x"] != "" {
		t.Error("the fake kept the caller's label map")
	}
	for _, s := range []runtime.MemberSpec{
		{Name: "db", Image: "db:1"},                      // name in use
		{Name: "other", Image: "missing:1"},              // no image
		{Name: "lost", Image: "agent:1", Beside: "none"}, // no such namespace
	} {
		if m, err := r.StartMember(context.Background(), s); err == nil || m.ID != "" {
			t.Errorf("%+v started: %+v", s, m)
		}
	}
	if _, err := r.StartMember(context.Background(), runtime.MemberSpec{Name: "x", Image: "missing:1"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("missing image: %v", err)
	}
}

// A failed start still returns the member's ID, for the caller to remove.
func TestStartFails(t *testing.T) {
	r := New()
	r.AddImage("app:1")
	boom := errors.New("boom")
	r.FailOn("StartMember", "app", boom)
	m, err := r.StartMember(context.Background(), runtime.MemberSpec{Name: "app", Image: "app:1"})
	if !errors.Is(err, boom) || m.ID == "" {
		t.Fatalf("%+v %v", m, err)
	}
	if st, _ := r.State(context.Background(), m.ID); st.Running {
		t.Error("a member that failed to start runs")
	}
	if err := r.RemoveMember(context.Background(), m.ID); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Removed(), []string{"app"}) || len(r.Live()) != 0 {
		t.Errorf("removed %v, live %v", r.Removed(), r.Live())
	}
}

// State follows Exit, StopMember and RemoveMember; a member beside a
// stopped one cannot start.
func TestStates(t *testing.T) {
	r := New()
	r.AddImage("app:1")
	ctx := context.Background()
	m := started(t, r, runtime.MemberSpec{Name: "app", Image: "app:1"})
	if st, err := r.State(ctx, m.ID); err != nil || !st.Running {
		t.Errorf("%+v %v", st, err)
	}
	if !r.Exit("app", 2, "fatal: no database\n") {
		t.Fatal("Exit found no running member")
	}
	if st, _ := r.State(ctx, m.ID); st.Running || st.ExitCode != 2 || st.Reason != "exited" {
		t.Errorf("after exit %+v", st)
	}
	if logs, _ := r.Logs(ctx, m.ID, 3); logs != "fatal: no database" {
		t.Errorf("logs %q", logs)
	}
	if _, err := r.StartMember(ctx, runtime.MemberSpec{Name: "agent", Image: "app:1", Beside: m.NetNS}); err == nil {
		t.Error("an agent started beside a stopped member")
	}
	n := started(t, r, runtime.MemberSpec{Name: "n", Image: "app:1"})
	if err := r.StopMember(ctx, n.ID, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.State(ctx, n.ID); st.Running || st.ExitCode != 143 {
		t.Errorf("stopped %+v", st)
	}
	if err := r.RemoveMember(ctx, n.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.State(ctx, n.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("removed member's state: %v", err)
	}
	if err := r.StopMember(ctx, n.ID, 0); err != nil {
		t.Errorf("stop of a removed member: %v", err)
	}
}

// Exec is answered by the longest registered prefix, needs a running
// member, and without a handler exits 127.
func TestExec(t *testing.T) {
	r := New()
	r.AddImage("agent:1")
	ctx := context.Background()
	m := started(t, r, runtime.MemberSpec{Name: "c", Image: "agent:1"})
	r.Handle("agent", func(ctx context.Context, x *Call) (int, error) { return 1, nil })
	r.Handle("agent ping", func(ctx context.Context, x *Call) (int, error) {
		fmt.Fprintf(x.Stdout, "%s %s %s", x.Member.Name, x.Cmd[len(x.Cmd)-1], x.Stdin)
		return 0, nil
	})
	var out, errb strings.Builder
	code, err := r.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"agent", "ping", "10.0.0.1"}, Stdin: strings.NewReader("in"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "c 10.0.0.1 in" {
		t.Errorf("ping: %d %q %v", code, out.String(), err)
	}
	if code, _ := r.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"agent", "idle"}}); code != 1 {
		t.Errorf("agent idle: %d", code)
	}
	if code, _ := r.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"agentx"}, Stderr: &errb}); code != 127 || !strings.Contains(errb.String(), "not found") {
		t.Errorf("unhandled: %d %q", code, errb.String())
	}
	if len(r.Execs()) != 3 || r.Execs()[0].Member != "c" {
		t.Errorf("execs %+v", r.Execs())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Exec(cctx, m.ID, runtime.ExecSpec{Cmd: []string{"agent"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	r.Exit("c", 0, "")
	if _, err := r.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"agent"}}); err == nil {
		t.Error("exec in a stopped member")
	}
}

// RemoveRun removes the run's members, those beside another first, and
// no other run's.
func TestRemoveRun(t *testing.T) {
	r := New()
	r.AddImage("i")
	ctx := context.Background()
	abc := map[string]string{runtime.LabelRun: "abc"}
	db := started(t, r, runtime.MemberSpec{Name: "db", Image: "i", Labels: abc})
	started(t, r, runtime.MemberSpec{Name: "db-agent", Image: "i", Labels: abc, Beside: db.NetNS})
	started(t, r, runtime.MemberSpec{Name: "other", Image: "i", Labels: map[string]string{runtime.LabelRun: "xyz"}})
	n, err := r.RemoveRun(ctx, "abc")
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if !slices.Equal(r.Removed(), []string{"db-agent", "db"}) || !slices.Equal(r.Live(), []string{"other"}) {
		t.Errorf("removed %v, live %v", r.Removed(), r.Live())
	}
	if _, err := r.RemoveRun(ctx, ""); err == nil {
		t.Error("empty run id")
	}
}

// Images: present, pulled when Pullable, else ErrNotFound.
func TestImages(t *testing.T) {
	r := New()
	ctx := context.Background()
	if ok, _ := r.HasImage(ctx, "a"); ok {
		t.Error("an empty runtime has an image")
	}
	if err := r.EnsureImage(ctx, "a"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("ensure absent: %v", err)
	}
	r.Pullable["a"] = true
	if err := r.EnsureImage(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.HasImage(ctx, "a"); !ok {
		t.Error("pulled image absent")
	}
}

// ListMembers finds members by their labels and role, any value of a
// label asked empty, in start order, with whether each runs; an armed
// fault is its error.
func TestListMembers(t *testing.T) {
	r := New()
	r.AddImage("db:1")
	ctx := context.Background()
	started(t, r, runtime.MemberSpec{Name: "a-db", Role: "db", Image: "db:1", Labels: map[string]string{runtime.LabelRun: "a"}})
	started(t, r, runtime.MemberSpec{Name: "b-db", Role: "db", Image: "db:1", Labels: map[string]string{runtime.LabelRun: "b"}})
	started(t, r, runtime.MemberSpec{Name: "loose", Image: "db:1"})
	r.Exit("b-db", 1, "")
	all, err := r.ListMembers(ctx, map[string]string{runtime.LabelRun: ""})
	if err != nil || len(all) != 2 || all[0].Name != "a-db" || !all[0].Running || all[1].Name != "b-db" || all[1].Running {
		t.Fatalf("every run's: %+v, %v", all, err)
	}
	if all[0].Labels[runtime.LabelRole] != "db" || all[0].Labels[runtime.LabelRun] != "a" {
		t.Errorf("labels %v", all[0].Labels)
	}
	if b, err := r.ListMembers(ctx, map[string]string{runtime.LabelRun: "b", runtime.LabelRole: "db"}); err != nil || len(b) != 1 || b[0].Name != "b-db" {
		t.Errorf("run b's database: %+v, %v", b, err)
	}
	boom := errors.New("boom")
	r.FailOn("ListMembers", "", boom)
	if _, err := r.ListMembers(ctx, nil); !errors.Is(err, boom) {
		t.Errorf("armed fault: %v", err)
	}
}

// What a study needs of the double beyond members: a test's address and
// published port, a member on the host's network, a streamed stdin, the
// agent's session, and failures armed by match.
func TestStudyFacilities(t *testing.T) {
	ctx := context.Background()
	r := New()
	r.AddImage("app:1")
	r.AddImage("agent:1")
	r.AddrOf = func(s runtime.MemberSpec) string {
		if s.Role == "app" {
			return "127.0.0.1"
		}
		return ""
	}
	r.PublishedAt = "127.0.0.1:8080"
	app := started(t, r, runtime.MemberSpec{Name: "run-app", Role: "app", Image: "app:1", Publish: []string{"80/tcp"}})
	db := started(t, r, runtime.MemberSpec{Name: "run-db", Role: "db", Image: "app:1"})
	if app.Addr != "127.0.0.1" || app.Published["80/tcp"] != "127.0.0.1:8080" || db.Addr == "127.0.0.1" || db.Published != nil {
		t.Errorf("app %+v, db %+v", app, db)
	}
	host, err := r.StartHostMember(ctx, runtime.MemberSpec{Name: "sweep", Image: "agent:1", Aliases: []string{"x"}}, runtime.OnHost)
	if err != nil || host.Addr != "" || host.NetNS != "host" || r.Bridge("net") != "auto" {
		t.Errorf("host member %+v, %v", host, err)
	}
	if _, err := r.StartHostMember(ctx, runtime.MemberSpec{Name: "sweep", Image: "agent:1"}, runtime.NoNet); err == nil {
		t.Error("a second member named sweep started")
	}

	// A streamed stdin is read as it comes: the handler answers before
	// the caller closes it.
	r.HandleStream("rttlab agent capture", func(ctx context.Context, x *Call) (int, error) {
		fmt.Fprintln(x.Stderr, "ready")
		b, err := io.ReadAll(x.StdinR)
		fmt.Fprintf(x.Stdout, "%s", b)
		return 0, err
	})
	pr, pw := io.Pipe()
	ready := make(chan struct{})
	var out strings.Builder
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(ctx, db.ID, runtime.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "capture"}, Stdin: pr, Stdout: &out, Stderr: closeOn{ready}})
		done <- err
	}()
	<-ready
	fmt.Fprint(pw, "stop")
	pw.Close()
	if err := <-done; err != nil || out.String() != "stop" {
		t.Errorf("streamed exec: %q, %v", out.String(), err)
	}

	// A session runs the verbs sent to it with their handlers.
	r.Handle("rttlab agent ping", func(ctx context.Context, x *Call) (int, error) {
		fmt.Fprint(x.Stdout, "pong")
		return 0, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_, err := r.Exec(ctx, db.ID, runtime.ExecSpec{Cmd: []string{"rttlab", "agent", "session"}, Stdin: inR, Stdout: outW})
		outW.CloseWithError(err)
	}()
	fmt.Fprintln(inW, `{"id":1,"args":["ping"]}`)
	fmt.Fprintln(inW, `{"id":1,"eof":true}`)
	sc := bufio.NewScanner(outR)
	var sess []string
	for sc.Scan() && !strings.Contains(sc.Text(), `"done":true`) {
		sess = append(sess, sc.Text())
	}
	inW.Close()
	if len(sess) != 1 || sess[0] != `{"id":1,"o":"cG9uZw=="}` { // "pong"
		t.Errorf("session answered %q", sess)
	}
	if got := r.Execs(); !slices.ContainsFunc(got, func(e Exec) bool { return slices.Equal(e.Cmd, []string{"rttlab", "agent", "ping"}) }) {
		t.Errorf("the session's call is not recorded: %+v", got)
	}
	if _, err := r.Exec(ctx, db.ID, runtime.ExecSpec{Cmd: []string{"psql"}}); err != nil || !slices.Equal(r.Unhandled, []string{"psql"}) {
		t.Errorf("unhandled %v, %v", r.Unhandled, err)
	}

	// Failures armed by a name's end, or by a command's words, a number
	// of times; a crash right after start; an image taken away.
	boom := errors.New("boom")
	r.FailTimes("Exec", "agent ping", 2, boom)
	for i, want := range []error{boom, boom, nil} {
		if _, err := r.Exec(ctx, app.ID, runtime.ExecSpec{Cmd: []string{"rttlab", "agent", "ping"}}); !errors.Is(err, want) {
			t.Errorf("ping %d: %v, want %v", i, err, want)
		}
	}
	r.FailTimes("RemoveMember", "-db", -1, boom)
	for range 2 {
		if err := r.RemoveMember(ctx, db.ID); !errors.Is(err, boom) {
			t.Errorf("remove db: %v", err)
		}
	}
	r.CrashOnStart("-app", 1, 3, "panic\n")
	crashed := started(t, r, runtime.MemberSpec{Name: "again-app", Image: "app:1"})
	if s, _ := r.State(ctx, crashed.ID); s.Running || s.ExitCode != 3 {
		t.Errorf("crashed member's state %+v", s)
	}
	if logs, _ := r.Logs(ctx, crashed.ID, 5); logs != "panic" {
		t.Errorf("crashed member's logs %q", logs)
	}
	if again := started(t, r, runtime.MemberSpec{Name: "third-app", Image: "app:1"}); again.ID == "" {
		t.Error("the crash was armed for one start only")
	} else if s, _ := r.State(ctx, again.ID); !s.Running {
		t.Errorf("second start: %+v", s)
	}
	r.DropImage("app:1")
	if _, err := r.StartMember(ctx, runtime.MemberSpec{Name: "late", Image: "app:1"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("start without its image: %v", err)
	}
}

// closeOn is a writer that closes ready at its first write.
type closeOn struct{ ready chan struct{} }

func (c closeOn) Write(b []byte) (int, error) {
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
	return len(b), nil
}
