package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/workloads"
)

// stub is a stand-in runtime: it keeps the spec of each exec and answers
// with a scripted exit status, output and error.
type stub struct {
	specs          []runtime.ExecSpec
	stdin          []string // what each exec read
	code           int
	stdout, stderr string
	err            error
}

func (s *stub) Exec(_ context.Context, id string, spec runtime.ExecSpec) (int, error) {
	s.specs = append(s.specs, spec)
	in := ""
	if spec.Stdin != nil {
		b, _ := io.ReadAll(spec.Stdin)
		in = string(b)
	}
	s.stdin = append(s.stdin, in)
	if s.err != nil {
		return -1, s.err
	}
	if spec.Stdout != nil {
		io.WriteString(spec.Stdout, s.stdout)
	}
	if spec.Stderr != nil {
		io.WriteString(spec.Stderr, s.stderr)
	}
	return s.code, nil
}

// line is the command line of the stub's last exec.
func (s *stub) line() string { return strings.Join(s.specs[len(s.specs)-1].Cmd, " ") }

// last is the stub's last exec.
func (s *stub) last() runtime.ExecSpec { return s.specs[len(s.specs)-1] }

func stubClient(s *stub) Client { return Client{D: s, ID: "c1", Name: "rttlab-r1-agent-app"} }

// Every agent verb runs as the agent image's rttlab binary.
func TestAgentCommand(t *testing.T) {
	if got := strings.Join(AgentCommand("load", "--url", "u"), " "); got != "/usr/local/bin/rttlab agent load --url u" {
		t.Errorf("AgentCommand = %q", got)
	}
	if got := strings.Join(Call{Verb: "ctl", Args: []string{"show"}}.Command(), " "); got != "/usr/local/bin/rttlab agent ctl show" {
		t.Errorf("Call.Command = %q", got)
	}
}

// Exec: an exit status other than 0 is an error naming the verb with the
// last three lines of stderr, returned with the output; AnyExit leaves
// the status to the caller; a failed exec and a dead member are errors
// of their own, the liveness watch asked before the status is judged.
func TestExec(t *testing.T) {
	ctx := context.Background()
	s := &stub{code: 4, stdout: "partial", stderr: "one\ntwo\nthree\nfour\n"}
	c := stubClient(s)
	res, err := c.Exec(ctx, Call{Verb: "load", Args: []string{"--url", "u"}, Timeout: time.Minute})
	var xe *ExitError
	if !errors.As(err, &xe) || xe.Verb != "load" || xe.Code != 4 || res.Code != 4 || string(res.Stdout) != "partial" {
		t.Fatalf("exit 4: %+v %v", res, err)
	}
	if want := "agent load exit 4:     two\n    three\n    four"; err.Error() != want {
		t.Errorf("exit 4 says %q, want %q", err, want)
	}
	if s.line() != "/usr/local/bin/rttlab agent load --url u" || s.last().Timeout != time.Minute || s.last().Stdin != nil || s.last().Env != nil {
		t.Errorf("spec %+v", s.last())
	}
	if res, err := c.Exec(ctx, Call{Verb: "load", AnyExit: true}); err != nil || res.Code != 4 || res.Stderr != s.stderr {
		t.Errorf("any exit: %+v %v", res, err)
	}
	s.err = errors.New("no such container")
	if _, err := c.Exec(ctx, Call{Verb: "load"}); err != s.err {
		t.Errorf("failed exec: %v", err)
	}
	s.err = nil
	dead := errors.New("container db exited (137)")
	c.Alive = func(context.Context) error { return dead }
	if _, err := c.Exec(ctx, Call{Verb: "load"}); err != dead {
		t.Errorf("a member died: %v", err)
	}
	// Output given to writers of the caller's goes there, not into the
	// Output.
	var out, errb strings.Builder
	c.Alive = nil
	s.code = 0
	if res, err := c.Exec(ctx, Call{Verb: "capture", Stdout: &out, Stderr: &errb}); err != nil || res.Stdout != nil || out.String() != "partial" || errb.String() != s.stderr {
		t.Errorf("streamed: %+v %v %q %q", res, err, out.String(), errb.String())
	}
}

// ctl: the line is the operation and its flags in the caller's order;
// the reply is decoded; a refusal is the reply's error, else stderr, else
// the exit status, naming the container; an unreadable reply of a
// successful call is an error.
func TestCtl(t *testing.T) {
	ctx := context.Background()
	s := &stub{stdout: `{"ok":true,"backend":"userspace","delay_ns":500000}` + "\n"}
	c := stubClient(s)
	rep, err := c.Ctl(ctx, CtlOptions{Op: "set", Args: []string{"--delay", "500000ns", "--peer", "10.0.0.3"}})
	if err != nil || !rep.OK || rep.Backend != "userspace" || rep.DelayNs != 500000 {
		t.Fatalf("set: %+v %v", rep, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent ctl set --delay 500000ns --peer 10.0.0.3" || s.last().Timeout != 30*time.Second {
		t.Errorf("spec %q %v", s.line(), s.last().Timeout)
	}
	for _, x := range []struct {
		code           int
		stdout, stderr string
		want           string
	}{
		{1, `{"ok":false,"error":"rttlab: no such peer"}`, "ignored", "agent rttlab-r1-agent-app: no such peer"},
		{1, "", "rttlab: dial unix: no such file\n", "agent rttlab-r1-agent-app: dial unix: no such file"},
		{2, "", "", "agent rttlab-r1-agent-app: agent ctl show exited 2 with no output"},
		{0, "not json", "", `agent rttlab-r1-agent-app: bad reply "not json": invalid character 'o' in literal null (expecting 'u')`},
	} {
		s.code, s.stdout, s.stderr = x.code, x.stdout, x.stderr
		if _, err := c.Ctl(ctx, CtlOptions{Op: "show"}); err == nil || err.Error() != x.want {
			t.Errorf("exit %d %q: %v, want %s", x.code, x.stdout, err, x.want)
		}
	}
	if s.line() != "/usr/local/bin/rttlab agent ctl show" {
		t.Errorf("show line %q", s.line())
	}
}

// ping: the line, the bound (count echoes, each an interval and the echo
// timeout, plus 30 s), the failure with stderr and the decoding.
func TestPing(t *testing.T) {
	ctx := context.Background()
	s := &stub{stdout: `{"dst":"10.0.0.3","sent":5,"received":5,"median_ns":1000000}`}
	c := stubClient(s)
	o := PingOptions{To: "10.0.0.3", Count: 5, Interval: 10 * time.Millisecond, Timing: "wire"}
	pr, err := c.Ping(ctx, o)
	if err != nil || pr.Sent != 5 || pr.Median != time.Millisecond {
		t.Fatalf("ping: %+v %v", pr, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent ping --to 10.0.0.3 --count 5 --interval 10ms --timing wire" {
		t.Errorf("line %q", s.line())
	}
	if want := 5*(10*time.Millisecond+workloads.EchoTimeout) + 30*time.Second; s.last().Timeout != want {
		t.Errorf("timeout %v, want %v", s.last().Timeout, want)
	}
	checkFailures(t, s, func() error { _, err := c.Ping(ctx, o); return err },
		"rttlab: operation not permitted\n", "ping from rttlab-r1-agent-app: rttlab: operation not permitted",
		"{", "ping from rttlab-r1-agent-app: unexpected end")
}

// checkFailures has the stub's exec exit 1 with stderr, then exit 0 with
// stdout that does not decode, and checks call's error each time: the
// failed exec's is failed, the unreadable answer's begins with
// unreadable.
func checkFailures(t *testing.T, s *stub, call func() error, stderr, failed, stdout, unreadable string) {
	t.Helper()
	s.code, s.stderr = 1, stderr
	if err := call(); err == nil || err.Error() != failed {
		t.Errorf("failed: %v", err)
	}
	s.code, s.stdout = 0, stdout
	if err := call(); err == nil || !strings.HasPrefix(err.Error(), unreadable) {
		t.Errorf("unreadable: %v", err)
	}
}

// sqlprobe: the line, the connection in the environment, the failure and
// the decoding.
func TestSQLProbe(t *testing.T) {
	ctx := context.Background()
	s := &stub{stdout: `[{"run":1,"n":100},{"run":2,"n":100}]`}
	c := stubClient(s)
	o := SQLProbeOptions{Host: "10.0.0.3", User: "u", Database: "rttlab", Password: "pw", Runs: 2, Calls: 100}
	runs, err := c.SQLProbe(ctx, o)
	if err != nil || len(runs) != 2 || runs[1].Run != 2 {
		t.Fatalf("probe: %+v %v", runs, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent sqlprobe --runs 2 --calls 100" || s.last().Timeout != 10*time.Minute {
		t.Errorf("spec %q %v", s.line(), s.last().Timeout)
	}
	if got := strings.Join(s.last().Env, " "); got != "PGHOST=10.0.0.3 PGPORT=5432 PGUSER=u PGDATABASE=rttlab PGPASSWORD=pw PGSSLMODE=disable" {
		t.Errorf("env %q", got)
	}
	checkFailures(t, s, func() error { _, err := c.SQLProbe(ctx, o); return err },
		"  rttlab: connection refused \n", "SELECT 1 probe from rttlab-r1-agent-app: rttlab: connection refused",
		"{}", "SELECT 1 probe: json: cannot unmarshal object")
}

// trace: the line with the headers, the requests as JSON lines on its
// input, a result per line, the failure and a broken line.
func TestTrace(t *testing.T) {
	ctx := context.Background()
	s := &stub{stdout: `{"type":"/a","path":"/a","status":200}` + "\n" + `{"type":"/b","path":"/b","status":500}` + "\n"}
	c := stubClient(s)
	o := TraceOptions{DB: "10.0.0.3:5432", URL: "http://127.0.0.1:8080", Header: []string{"Cookie: a=b"},
		Requests: []workloads.Request{{Type: "/a", Path: "/a"}, {Type: "warmup", Path: "/b"}}}
	rs, err := c.Trace(ctx, o)
	if err != nil || len(rs) != 2 || rs[1].Status != 500 {
		t.Fatalf("trace: %+v %v", rs, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent trace --db 10.0.0.3:5432 --url http://127.0.0.1:8080 --header Cookie: a=b" || s.last().Timeout != 20*time.Minute {
		t.Errorf("spec %q %v", s.line(), s.last().Timeout)
	}
	if got, want := s.stdin[len(s.stdin)-1], `{"type":"/a","path":"/a"}`+"\n"+`{"type":"warmup","path":"/b"}`+"\n"; got != want {
		t.Errorf("input %q, want %q", got, want)
	}
	checkFailures(t, s, func() error { _, err := c.Trace(ctx, o); return err },
		"rttlab: no route\n", "trace in rttlab-r1-agent-app: rttlab: no route",
		`{"type":"/a"}`+"\n{broken\n", "trace output: ")
}

// capture: the line, its input, its output streamed to the caller's
// writers, the exit status returned whatever it is, and the decoding.
func TestCapture(t *testing.T) {
	ctx := context.Background()
	s := &stub{code: 3, stdout: `{"iface":"eth0","local":"10.0.0.2","peer":"10.0.0.3"}`, stderr: workloads.CaptureReady + " eth0\n"}
	c := stubClient(s)
	var out, errb strings.Builder
	o := CaptureOptions{Iface: "eth0", Local: "10.0.0.2", Peers: []string{"10.0.0.3", "10.0.0.4"}, For: 15 * time.Minute, MaxPackets: 100000}
	code, err := c.Capture(ctx, o, strings.NewReader(""), &out, &errb)
	if err != nil || code != 3 || errb.String() != s.stderr {
		t.Fatalf("capture: %d %v %q", code, err, errb.String())
	}
	if s.line() != "/usr/local/bin/rttlab agent capture --iface eth0 --local 10.0.0.2 --peer 10.0.0.3,10.0.0.4 --for 15m0s --max-packets 100000 --stop-on-eof" ||
		s.last().Timeout != 16*time.Minute || s.last().Stdin == nil {
		t.Errorf("spec %q %v", s.line(), s.last().Timeout)
	}
	cp, err := DecodeCapture([]byte(out.String()))
	if err != nil || cp.Iface != "eth0" || cp.Peer.String() != "10.0.0.3" {
		t.Errorf("decoded %+v %v", cp, err)
	}
	if _, err := DecodeCapture([]byte("[")); err == nil {
		t.Error("an unreadable capture decoded")
	}
	s.err = errors.New("exec gone")
	if _, err := c.Capture(ctx, o, nil, &out, &errb); err != s.err {
		t.Errorf("failed exec: %v", err)
	}
}

// session: the line, its streams, a week's bound, and its exit status
// no error.
func TestSession(t *testing.T) {
	s := &stub{code: 1, stdout: "frames", stderr: "bye"}
	var out, errb strings.Builder
	if err := stubClient(s).Session(context.Background(), strings.NewReader("in"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if s.line() != "/usr/local/bin/rttlab agent session" || s.last().Timeout != 7*24*time.Hour || s.stdin[0] != "in" || out.String() != "frames" || errb.String() != "bye" {
		t.Errorf("spec %q %v %q %q %q", s.line(), s.last().Timeout, s.stdin[0], out.String(), errb.String())
	}
}

// A load run for a route or a mix: its line and bound; its results read
// after the caller's checks, a failed client (an exit status other than
// 0, or an answer that is not results) told apart from a short answer.
func TestRunLoad(t *testing.T) {
	ctx := context.Background()
	var answer strings.Builder
	w := workloads.NewResultWriter(&answer)
	for i := 0; i < 3; i++ {
		w.Write(workloads.Result{Seq: i, Path: "/feed", Status: 200, LatencyNS: 1e6})
	}
	s := &stub{stdout: answer.String()}
	c := stubClient(s)
	o := LoadOptions{URL: "http://app:8080", Warmup: 1, Requests: 2, Route: "/feed"}
	run, err := c.RunLoad(ctx, o)
	if err != nil || run.Want != 3 {
		t.Fatalf("run: %+v %v", run, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent load --url http://app:8080 --warmup 1 --requests 2 --route /feed" || s.last().Timeout != 3*30*time.Second+time.Minute {
		t.Errorf("spec %q %v", s.line(), s.last().Timeout)
	}
	if rs, failed, err := run.Results(); err != nil || failed || len(rs) != 3 {
		t.Errorf("results: %d %v %v", len(rs), failed, err)
	}
	for _, x := range []struct {
		code           int
		stdout, stderr string
		failed         bool
		want           string
	}{
		{1, answer.String(), "a\nb\nc\nrttlab: refused\n", true, "load client exit 1:     b\n    c\n    rttlab: refused"},
		{1, "{broken\n", "", true, "load client output: "},
		{0, "{broken\n", "", true, "load client output: "},
		{0, "", "", false, "load client returned 0 results, want 3"},
	} {
		s.code, s.stdout, s.stderr = x.code, x.stdout, x.stderr
		run, err := c.RunLoad(ctx, o)
		if err != nil || run.Code != x.code {
			t.Fatalf("exit %d: %+v %v", x.code, run, err)
		}
		rs, failed, err := run.Results()
		if rs != nil || failed != x.failed || err == nil || !strings.HasPrefix(err.Error(), x.want) {
			t.Errorf("exit %d %q: %d %v %v, want %v %s", x.code, x.stdout, len(rs), failed, err, x.failed, x.want)
		}
	}
}

// The load verbs' lines and bounds: capacity and connect.
func TestLoadVerbLines(t *testing.T) {
	ctx := context.Background()
	s := &stub{stdout: `{"samples_ns":[5]}`}
	c := stubClient(s)
	if ns, err := c.Connect(ctx, "db:5432", 2, 3); err != nil || len(ns) != 1 {
		t.Fatalf("connect: %v %v", ns, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent connect --to db:5432 --warmup 2 --count 3" || s.last().Timeout != 5*10*time.Second+time.Minute {
		t.Errorf("connect spec %q %v", s.line(), s.last().Timeout)
	}
	s.stdout = "["
	if _, err := c.Connect(ctx, "db:5432", 0, 1); err == nil || !strings.HasPrefix(err.Error(), "connect probe: ") {
		t.Errorf("connect unreadable: %v", err)
	}
	s.stdout = `{"rate":12.5}`
	o := CapacityOptions{URL: "http://a", Paths: []string{"/x"}, Count: 10, MaxP99: time.Millisecond, Timeout: time.Second, Seed: 3, MaxTrials: 4}
	if cp, err := c.Capacity(ctx, o, 2*time.Minute); err != nil || cp.Rate != 12.5 {
		t.Fatalf("capacity: %+v %v", cp, err)
	}
	if s.line() != "/usr/local/bin/rttlab agent capacity "+strings.Join(CapacityArgs(o), " ") || s.last().Timeout != 2*time.Minute {
		t.Errorf("capacity spec %q %v", s.line(), s.last().Timeout)
	}
	s.code, s.stderr = 2, "rttlab: bad flag\n"
	if _, err := c.Capacity(ctx, o, time.Minute); err == nil || err.Error() != fmt.Sprintf("agent capacity exit 2: %s", runtime.LastLines(s.stderr, 3)) {
		t.Errorf("capacity failed: %v", err)
	}
	s.code, s.stdout = 0, `{"warning":"x"}`
	if _, err := c.Load(ctx, LoadOptions{URL: "http://a", Paths: []string{"/x"}}); err == nil || !strings.HasPrefix(err.Error(), "load client output: ") {
		t.Errorf("load unreadable: %v", err)
	}
	if s.last().Timeout != 30*time.Second+time.Minute {
		t.Errorf("load bound %v", s.last().Timeout)
	}
}
