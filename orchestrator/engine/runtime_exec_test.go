package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// execEngine answers the three calls of an exec the way the engine does:
// create, start with the connection upgraded to a raw stream of
// multiplexed frames, and inspect for the exit code. The program it runs
// is attached: it gets the stdin the client sent (once the client closed
// its side, if it attached stdin) and writes the frames.
type execEngine struct {
	*dockerd
	exitCode int
	program  func(stdin []byte, stdout, stderr io.Writer)
}

func newExecEngine(t *testing.T) *execEngine {
	e := &execEngine{dockerd: newDockerd(t)}
	e.handle("POST /containers/{id}/exec", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, container.ExecCreateResponse{ID: "exec-" + r.PathValue("id")})
	})
	e.handle("POST /exec/{id}/start", e.start)
	e.handle("GET /exec/{id}/json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, container.ExecInspect{ExecID: r.PathValue("id"), ExitCode: e.exitCode})
	})
	return e
}

// start upgrades the connection like the engine's exec start and runs the
// program over it.
func (e *execEngine) start(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "tcp" || r.Header.Get("Connection") != "Upgrade" {
		engineError(w, http.StatusBadRequest, "exec start without an upgrade")
		return
	}
	conn, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		e.t.Errorf("hijack: %v", err)
		return
	}
	defer conn.Close()
	brw.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	brw.Flush()
	var stdin []byte
	if e.attachedStdin(r) {
		stdin, _ = io.ReadAll(brw) // until the client's CloseWrite
	}
	e.program(stdin, stdcopy.NewStdWriter(conn, stdcopy.Stdout), stdcopy.NewStdWriter(conn, stdcopy.Stderr))
}

// attachedStdin says whether the exec the start belongs to attached stdin.
func (e *execEngine) attachedStdin(r *http.Request) bool {
	id := strings.TrimPrefix(r.PathValue("id"), "exec-")
	for _, c := range e.requests("POST", "/containers/"+id+"/exec") {
		var o container.ExecOptions
		c.decode(e.t, &o)
		return o.AttachStdin
	}
	return false
}

// Exec sends the command, user and environment, streams the program's
// stdin and demultiplexed output, and returns its exit code.
func TestExecStreamsAndReturnsExitCode(t *testing.T) {
	e := newExecEngine(t)
	e.exitCode = 3
	e.program = func(stdin []byte, stdout, stderr io.Writer) {
		stdout.Write([]byte("got: "))
		stdout.Write(bytes.ToUpper(stdin))
		stderr.Write([]byte("warning: something\n"))
		stdout.Write([]byte("done\n"))
	}
	r := e.runtime()
	var out, errOut bytes.Buffer
	code, err := r.Exec(context.Background(), "app1", ExecSpec{
		Cmd: []string{"psql", "-f", "-"}, User: "postgres", Env: []string{"PGDATABASE=bench"},
		Stdin: strings.NewReader("select 1;\n"), Stdout: &out, Stderr: &errOut,
	})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if out.String() != "got: SELECT 1;\ndone\n" || errOut.String() != "warning: something\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
	var o container.ExecOptions
	e.only("POST", "/containers/app1/exec").decode(t, &o)
	if !slices.Equal(o.Cmd, []string{"psql", "-f", "-"}) || o.User != "postgres" || !slices.Equal(o.Env, []string{"PGDATABASE=bench"}) ||
		!o.AttachStdin || !o.AttachStdout || !o.AttachStderr {
		t.Errorf("exec options %+v", o)
	}
	e.only("GET", "/exec/exec-app1/json")
}

// Without stdin nothing is attached to it, and output nobody asked for is
// discarded.
func TestExecWithoutStdinOrWriters(t *testing.T) {
	e := newExecEngine(t)
	e.program = func(stdin []byte, stdout, stderr io.Writer) {
		if stdin != nil {
			t.Errorf("stdin %q read from an exec without stdin", stdin)
		}
		stdout.Write([]byte("ignored\n"))
		stderr.Write([]byte("ignored too\n"))
	}
	code, err := e.runtime().Exec(context.Background(), "app1", ExecSpec{Cmd: []string{"true"}})
	if err != nil || code != 0 {
		t.Fatalf("exec: %d, %v", code, err)
	}
	var o container.ExecOptions
	e.only("POST", "/containers/app1/exec").decode(t, &o)
	if o.AttachStdin {
		t.Error("stdin attached without a reader")
	}
}

// An exec whose program never ends is cut at its timeout, and the
// connection closed: the program sees its stdin end.
func TestExecTimeout(t *testing.T) {
	e := newExecEngine(t)
	ended := make(chan struct{})
	e.handle("POST /exec/hang/start", func(w http.ResponseWriter, r *http.Request) {
		conn, brw, _ := w.(http.Hijacker).Hijack()
		defer close(ended)
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		brw.Flush()
		stdcopy.NewStdWriter(conn, stdcopy.Stdout).Write([]byte("waiting\n"))
		io.Copy(io.Discard, brw) // until the client hangs up
	})
	e.handle("POST /containers/hangs/exec", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, container.ExecCreateResponse{ID: "hang"})
	})
	var out bytes.Buffer
	start := time.Now()
	_, err := e.runtime().Exec(context.Background(), "hangs", ExecSpec{Cmd: []string{"sleep", "infinity"}, Stdout: &out, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "exec sleep in hangs: ") {
		t.Errorf("err %v, want the deadline, naming the command", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Exec returned after %v", el)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the connection stayed open after the timeout")
	}
	if out.String() != "waiting\n" {
		t.Errorf("output before the timeout %q", out.String())
	}
	if n := len(e.requests("GET", "/exec/hang/json")); n != 0 {
		t.Errorf("inspected %d times after a timeout", n)
	}
}

// Each step's failure says which step and which command failed.
func TestExecFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(e *execEngine)
		want  string
	}{
		{"create", func(e *execEngine) {
			e.handle("POST /containers/stopped/exec", replyError(http.StatusConflict, "container stopped is not running"))
		}, "exec psql in stopped: "},
		{"attach", func(e *execEngine) {
			e.handle("POST /containers/stopped/exec", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, http.StatusCreated, container.ExecCreateResponse{ID: "noupgrade"})
			})
			e.handle("POST /exec/noupgrade/start", replyError(http.StatusInternalServerError, "no"))
		}, "attach exec psql in stopped: "},
		{"inspect", func(e *execEngine) {
			e.program = func(_ []byte, stdout, _ io.Writer) { stdout.Write([]byte("ok\n")) }
			e.handle("GET /exec/exec-stopped/json", replyError(http.StatusNotFound, "No such exec instance"))
		}, "exec psql in stopped: inspect: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newExecEngine(t)
			c.setup(e)
			_, err := e.runtime().Exec(context.Background(), "stopped", ExecSpec{Cmd: []string{"psql"}})
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("err %v, want %q...", err, c.want)
			}
		})
	}
}

// A stream that breaks inside a frame is an error reading the output, not
// an exit code.
func TestExecBrokenStream(t *testing.T) {
	e := newExecEngine(t)
	e.handle("POST /exec/broken/start", func(w http.ResponseWriter, r *http.Request) {
		conn, brw, _ := w.(http.Hijacker).Hijack()
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		brw.Flush()
		stdcopy.NewStdWriter(conn, stdcopy.Stdout).Write([]byte("partial\n"))
		conn.Write([]byte{7, 0, 0, 0, 0, 0, 0, 1, 'x'}) // stream 7 does not exist
	})
	e.handle("POST /containers/app1/exec", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, container.ExecCreateResponse{ID: "broken"})
	})
	var out bytes.Buffer
	code, err := e.runtime().Exec(context.Background(), "app1", ExecSpec{Cmd: []string{"cat"}, Stdout: &out})
	if code != -1 || err == nil || !strings.HasPrefix(err.Error(), "exec cat in app1: read output: ") {
		t.Errorf("exec: %d, %v", code, err)
	}
	if out.String() != "partial\n" {
		t.Errorf("output before the break %q", out.String())
	}
}
