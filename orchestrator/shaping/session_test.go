package shaping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
)

// sessionLab is a fake engine with one running agent container whose
// ctl answers at once, whose ping waits for its context and whose
// capture runs until its stdin closes.
func sessionLab(t *testing.T) (*enginefake.Engine, string) {
	t.Helper()
	f := enginefake.New()
	f.AddImage("rttlab/agent:latest", nil)
	id, err := f.CreateContainer(context.Background(), engine.ContainerSpec{Name: "a-agent", Image: "rttlab/agent:latest"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	f.Handle("rttlab agent ctl", func(ctx context.Context, x *enginefake.Call) (int, error) {
		if x.Cmd[3] == "none" {
			fmt.Fprintln(x.Stderr, `rttlab: ctl "none": use set, clear, show or ping`)
			return 2, nil
		}
		fmt.Fprintf(x.Stdout, `{"ok":true,"op":%q}`+"\n", x.Cmd[3])
		return 0, nil
	})
	f.Handle("rttlab agent ping", func(ctx context.Context, x *enginefake.Call) (int, error) {
		<-ctx.Done()
		return -1, ctx.Err()
	})
	f.HandleStream("rttlab agent capture", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stderr, "capturing on eth0")
		_, _ = io.Copy(io.Discard, x.StdinR)
		fmt.Fprintln(x.Stdout, `{"packets":[]}`)
		return 0, nil
	})
	f.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
		fmt.Fprintln(x.Stdout, "loaded")
		return 0, nil
	})
	return f, id
}

// sessionsStarted counts the execs that started a session.
func sessionsStarted(f *enginefake.Engine) int {
	n := 0
	for _, e := range f.Execs() {
		if strings.Join(e.Cmd, " ") == "/usr/local/bin/rttlab agent session" {
			n++
		}
	}
	return n
}

// Many calls, some at once, go through one session; a capture runs
// until its stdin closes while other calls come and go.
func TestSessionsRunCallsInOneProcess(t *testing.T) {
	f, id := sessionLab(t)
	s := WithSessions(f)
	defer s.Close()
	ctx := context.Background()
	pr, pw := io.Pipe()
	var capOut, capErr bytes.Buffer
	capDone := make(chan int, 1)
	go func() {
		code, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "capture", "--stop-on-eof"},
			Stdin: pr, Stdout: &capOut, Stderr: &syncWriter{mu: new(sync.Mutex), w: &capErr}})
		if err != nil {
			code = -1
		}
		capDone <- code
	}()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			code, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "show"}, Stdout: &out})
			if err != nil || code != 0 || out.String() != `{"ok":true,"op":"show"}`+"\n" {
				t.Errorf("call %d: %d %v %q", i, code, err, out.String())
			}
		}()
	}
	wg.Wait()
	select {
	case code := <-capDone:
		t.Fatalf("the capture ended (%d) before its stdin closed", code)
	case <-time.After(20 * time.Millisecond):
	}
	pw.Close()
	if code := <-capDone; code != 0 || capOut.String() != `{"packets":[]}`+"\n" {
		t.Errorf("capture: %d %q", code, capOut.String())
	}
	if n := sessionsStarted(f); n != 1 {
		t.Errorf("%d sessions started, want 1", n)
	}
	// Bad input keeps its exit status and its words.
	var errb bytes.Buffer
	if code, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "none"}, Stderr: &errb}); code != 2 || err != nil || !strings.Contains(errb.String(), `ctl "none"`) {
		t.Errorf("bad input: %d %v %q", code, err, errb.String())
	}
}

// A call that outlives its timeout is stopped and says so; the session
// goes on.
func TestSessionsCallTimeout(t *testing.T) {
	f, id := sessionLab(t)
	s := WithSessions(f)
	defer s.Close()
	ctx := context.Background()
	_, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ping", "--to", "10.0.0.2"}, Timeout: 30 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if code, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "show"}}); code != 0 || err != nil {
		t.Errorf("after a timeout: %d %v", code, err)
	}
	if n := sessionsStarted(f); n != 1 {
		t.Errorf("%d sessions started, want 1", n)
	}
}

// What a session does not run (the load client: timed, a process of its
// own; a call with an environment) is an exec of its own, and a
// container whose session cannot start gets execs.
func TestSessionsLeaveOtherCallsToExec(t *testing.T) {
	f, id := sessionLab(t)
	s := WithSessions(f)
	defer s.Close()
	ctx := context.Background()
	var out bytes.Buffer
	if code, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "load"}, Stdout: &out}); code != 0 || err != nil || out.String() != "loaded\n" {
		t.Errorf("load: %d %v %q", code, err, out.String())
	}
	if _, ok := sessionArgs(engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ping"}, Env: []string{"A=1"}}); ok {
		t.Error("a call with an environment went to the session")
	}
	if n := sessionsStarted(f); n != 0 {
		t.Errorf("%d sessions started for a load", n)
	}
	f.FailOn("Exec", "agent session", -1, errors.New("no such verb"))
	out.Reset()
	if code, err := s.Exec(ctx, id, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "show"}, Stdout: &out}); code != 0 || err != nil || !strings.Contains(out.String(), `"show"`) {
		t.Errorf("no session: %d %v %q", code, err, out.String())
	}
	if !s.refused[id] {
		t.Error("the container was not marked as having no session")
	}
}
