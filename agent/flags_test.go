package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The probes' and drivers' bad flags are one-line usage errors (exit 2)
// that name the flag, found before anything is sent or opened.
func TestAgentCommandsRefuseBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ping", "--to", "127.0.0.1", "--count", "0"}, "--count 0: use 1..100000"},
		{[]string{"ping", "--to", "127.0.0.1", "--count", "100001"}, "--count 100001: use 1..100000"},
		{[]string{"ping", "--to", "127.0.0.1", "--interval", "-1ms"}, "--interval must not be negative"},
		{[]string{"ping", "--to", "127.0.0.1", "--timing", "kernel"}, `--timing "kernel": use wire (the reply's kernel stamp) or process (its read)`},
		{[]string{"ping", "--to", "db"}, `--to "db": not an IP address`},
		{[]string{"ping"}, `--to "": not an IP address`},
		{[]string{"sqlprobe", "--runs", "0"}, "--runs 1..1000 and --calls 1..1000000"},
		{[]string{"sqlprobe", "--runs", "1001"}, "--runs 1..1000 and --calls 1..1000000"},
		{[]string{"sqlprobe", "--calls", "0"}, "--runs 1..1000 and --calls 1..1000000"},
		{[]string{"sqlprobe", "--calls", "1000001"}, "--runs 1..1000 and --calls 1..1000000"},
		{[]string{"trace"}, `--db "": use IP:PORT`},
		{[]string{"trace", "--db", "db:5432"}, `--db "db:5432": use IP:PORT`},
		{[]string{"trace", "--db", "127.0.0.1"}, `--db "127.0.0.1": use IP:PORT`},
		{[]string{"trace", "--db", "127.0.0.1:5432", "--header", "Cookie"}, `--header "Cookie": use 'Name: value'`},
		{[]string{"workers-proxy"}, "--config-json is required"},
	} {
		code, out, errs := execLineIn(context.Background(), strings.NewReader(""), append([]string{"agent"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with %q", c.args, code, out, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: not one line: %q", c.args, errs)
		}
	}
}

// sqlprobe fails (exit 1) on connection settings it cannot read, before
// it connects anywhere.
func TestAgentSQLProbeBadDSN(t *testing.T) {
	code, out, errs := execLine(context.Background(), "agent", "sqlprobe", "--dsn", "postgres://%zz", "--runs", "1", "--calls", "1")
	if code != 1 || out != "" || !strings.Contains(errs, "parse connection settings") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// trace reads its requests from stdin: a line that is not a request is a
// failure naming its place; with good requests it goes on to open the
// interface, and fails on one that does not exist.
func TestAgentTraceInput(t *testing.T) {
	code, _, errs := execLineIn(context.Background(), strings.NewReader(`{"type":"a","path":"/a"}`+"\n"+`{"type":`),
		"agent", "trace", "--db", "127.0.0.1:5432", "--iface", "rttlab-none0")
	if code != 1 || !strings.Contains(errs, "trace: request 2 on stdin") {
		t.Errorf("bad stdin: exit %d %q", code, errs)
	}
	code, out, errs := execLineIn(context.Background(), strings.NewReader(`{"type":"a","path":"/a"}`+"\n"),
		"agent", "trace", "--db", "127.0.0.1:5432", "--iface", "rttlab-none0", "--header", "X-Test: 1")
	if code != 1 || out != "" || !strings.Contains(errs, "wire: interface rttlab-none0") {
		t.Errorf("missing interface: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// watchedCtx is a context that says when its Done channel is first
// asked for.
type watchedCtx struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func (c *watchedCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

// idle waits on its context and returns only once it ends, then exits
// cleanly without output.
func TestAgentIdle(t *testing.T) {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &watchedCtx{Context: base, asked: make(chan struct{})}
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := execLine(ctx, "agent", "idle")
		done <- result{code, out, errs}
	}()
	select {
	case <-ctx.asked:
	case r := <-done:
		t.Fatalf("idle returned without waiting on its context: %+v", r)
	}
	select {
	case r := <-done:
		t.Fatalf("idle returned before its context ended: %+v", r)
	default:
	}
	cancel()
	if r := <-done; r.code != 0 || r.out != "" || r.err != "" {
		t.Errorf("idle: %+v", r)
	}
	if code, _, _ := execLine(context.Background(), "agent", "idle", "now"); code != 2 {
		t.Error("idle took an argument")
	}
}

// sweep and netem-probe take no arguments and only their own flags; they
// refuse the rest before touching any table or qdisc.
func TestAgentSweepAndProbeArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "run1/"}, `sweep: takes no arguments, got "run1/"; usage: agent sweep`},
		{[]string{"sweep", "--list", "x"}, `sweep: takes no arguments, got "x"`},
		{[]string{"sweep", "--label-prefix"}, "flag needs an argument: --label-prefix"},
		{[]string{"sweep", "--prefix", "run1/"}, "unknown flag: --prefix"},
		{[]string{"netem-probe", "lo"}, `netem-probe: takes no arguments, got "lo"`},
		{[]string{"netem-probe", "--link", "lo"}, "unknown flag: --link"},
	} {
		code, out, errs := execLine(context.Background(), append([]string{"agent"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with %q", c.args, code, out, errs, c.want)
		}
	}
}

// workers-proxy reads and checks its JSON configuration; a good one
// opens the decision log, serves, and stops cleanly when its context
// ends.
func TestAgentWorkersProxy(t *testing.T) {
	for _, c := range []struct {
		js   string
		want string
	}{
		{`{`, "parse workers proxy config"},
		{`{"upstreams":[{"name":"w0","url":"http://127.0.0.1:1"}],"colour":1}`, `unknown field "colour"`},
		{`{"upstreams":[]}`, "workers proxy config: no upstreams"},
		{`{"upstreams":[{"name":"w0","url":"http://127.0.0.1:1"}],"threads":-1}`, "threads -1 is negative"},
	} {
		code, out, errs := execLine(context.Background(), "agent", "workers-proxy", "--config-json", c.js)
		if code == 0 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want a failure with %q", c.js, code, out, errs, c.want)
		}
	}

	logPath := filepath.Join(t.TempDir(), "log", "decisions.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	js := `{"listen":"127.0.0.1:0","upstreams":[{"name":"w0","url":"http://127.0.0.1:1"},{"name":"w1","url":"http://127.0.0.1:2"}],` +
		`"threads":2,"rule":"round-robin","log_path":` + jsonString(logPath) + `}`
	code, out, errs := execLine(ctx, "agent", "workers-proxy", "--config-json", js)
	if code != 0 || out != "" {
		t.Errorf("good config: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("decision log: %v", err)
	}
}
