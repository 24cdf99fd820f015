package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/internal/session"
	"github.com/rttlab/rttlab/netem"
)

// standInAgent answers the agent's socket protocol (one JSON request, one
// JSON reply per connection, as netem.Serve does) with replies from a
// function, and keeps the requests it got.
type standInAgent struct {
	path string
	mu   sync.Mutex
	got  []netem.Request
}

// startStandInAgent serves reply on a fresh unix socket until the test ends.
func startStandInAgent(t *testing.T, reply func(netem.Request) netem.Reply) *standInAgent {
	t.Helper()
	// A short folder: a unix socket path has a small length limit.
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	a := &standInAgent{path: filepath.Join(dir, "agent.sock")}
	ln, err := net.Listen("unix", a.path)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var req netem.Request
			rep := netem.Reply{Error: "bad request"}
			if err := json.NewDecoder(c).Decode(&req); err == nil {
				a.mu.Lock()
				a.got = append(a.got, req)
				a.mu.Unlock()
				rep = reply(req)
			}
			_ = json.NewEncoder(c).Encode(rep)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		os.RemoveAll(dir)
	})
	return a
}

// requests returns the requests the stand-in got so far.
func (a *standInAgent) requests() []netem.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]netem.Request(nil), a.got...)
}

// echoReply answers like a healthy agent: ok, with a set request's
// setting active.
func echoReply(req netem.Request) netem.Reply {
	rep := netem.Reply{OK: true, Backend: "userspace", Why: "stand-in", Direction: "ingress"}
	if req.Op == "set" {
		rep.Active, rep.DelayNs, rep.Peers, rep.PeerDelays, rep.FloorNs = true, req.DelayNs, req.Peers, req.PeerDelays, req.FloorNs
	}
	return rep
}

// prepare accepts set with exactly one kind of delay and the other
// operations as they are, and refuses the rest with a usage error.
func TestAgentCtlPrepare(t *testing.T) {
	for _, c := range []struct {
		op   string
		o    agentCtlOptions
		want string // "" when accepted
	}{
		{"set", agentCtlOptions{delay: "250us"}, ""},
		{"set", agentCtlOptions{delay: "0"}, ""},
		{"set", agentCtlOptions{peerDelays: []string{"172.18.0.3=1ms"}}, ""},
		{"set", agentCtlOptions{}, "ctl set needs --delay (e.g. --delay 250us) or --peer-delay IP=D, not both"},
		{"set", agentCtlOptions{peers: []string{"172.18.0.3"}}, "ctl set needs --delay"},
		{"set", agentCtlOptions{delay: "1ms", peerDelays: []string{"172.18.0.3=1ms"}}, "ctl set needs --delay"},
		{"set", agentCtlOptions{peers: []string{"172.18.0.4"}, peerDelays: []string{"172.18.0.3=1ms"}}, "ctl set: --peer goes with --delay; --peer-delay IP=D names its peer itself"},
		{"clear", agentCtlOptions{peerDelays: []string{"172.18.0.3=1ms"}}, "ctl clear takes no --delay, --floor, --peer or --peer-delay: they are set's"},
		{"show", agentCtlOptions{delay: "1ms"}, "ctl show takes no --delay"},
		{"ping", agentCtlOptions{floor: "1ms"}, "ctl ping takes no --delay"},
		{"clear", agentCtlOptions{peers: []string{"172.18.0.3"}}, "ctl clear takes no --delay"},
		{"clear", agentCtlOptions{}, ""},
		{"show", agentCtlOptions{}, ""},
		{"ping", agentCtlOptions{}, ""},
		{"reset", agentCtlOptions{}, `ctl "reset": use set, clear, show or ping`},
		{"", agentCtlOptions{}, `ctl "": use set, clear, show or ping`},
	} {
		err := c.o.prepare(c.op)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s %+v: %v", c.op, c.o, err)
			}
			continue
		}
		var ue cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want a usage error with %q", c.op, c.o, err, c.want)
		}
	}
}

// request turns --delay, --peer, --floor and --peer-delay into the
// socket's request: delays in nanoseconds, a bare number in milliseconds,
// the delays only for set.
func TestAgentCtlRequest(t *testing.T) {
	for _, c := range []struct {
		op   string
		o    agentCtlOptions
		want netem.Request
	}{
		{"set", agentCtlOptions{delay: "250us"}, netem.Request{Op: "set", DelayNs: 250_000}},
		{"set", agentCtlOptions{delay: "0.5"}, netem.Request{Op: "set", DelayNs: 500_000}},
		{"set", agentCtlOptions{delay: "0"}, netem.Request{Op: "set"}},
		{"set", agentCtlOptions{delay: "1ms", peers: []string{"172.18.0.3", "172.18.0.4"}, floor: "50us"},
			netem.Request{Op: "set", DelayNs: 1_000_000, Peers: []string{"172.18.0.3", "172.18.0.4"}, FloorNs: 50_000}},
		{"set", agentCtlOptions{peerDelays: []string{"172.18.0.3=125us", "fd00::2=2ms"}},
			netem.Request{Op: "set", PeerDelays: []netem.PeerDelayJSON{{Peer: "172.18.0.3", DelayNs: 125_000}, {Peer: "fd00::2", DelayNs: 2_000_000}}}},
		{"clear", agentCtlOptions{delay: "1ms", floor: "1ms"}, netem.Request{Op: "clear"}},
		{"show", agentCtlOptions{}, netem.Request{Op: "show"}},
	} {
		got, err := c.o.request(c.op)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %+v: %+v, %v; want %+v", c.op, c.o, got, err, c.want)
		}
	}
}

// request refuses a delay, floor or per-peer delay it cannot read with a
// one-line usage error naming what was wrong.
func TestAgentCtlRequestRefusesBadDelays(t *testing.T) {
	for _, c := range []struct {
		o    agentCtlOptions
		want []string
	}{
		{agentCtlOptions{delay: "2s"}, []string{`delay "2s"`, "maximum"}},
		{agentCtlOptions{delay: "fast"}, []string{`delay "fast"`, "not a number"}},
		{agentCtlOptions{delay: "-1ms"}, []string{`delay "-1ms"`, "negative"}},
		{agentCtlOptions{delay: "5m"}, []string{`delay "5m"`, "unknown unit"}},
		{agentCtlOptions{delay: "1ms", floor: "-1us"}, []string{"--floor: ", `"-1us"`, "negative"}},
		{agentCtlOptions{delay: "1ms", floor: "NaN"}, []string{"--floor: ", "not a finite number"}},
		{agentCtlOptions{peerDelays: []string{"172.18.0.3"}}, []string{`--peer-delay "172.18.0.3": use IP=DELAY, e.g. 172.18.0.3=125us`}},
		{agentCtlOptions{peerDelays: []string{"db=1ms"}}, []string{`--peer-delay "db=1ms": "db" is not an IP address`}},
		{agentCtlOptions{peerDelays: []string{"=1ms"}}, []string{`--peer-delay "=1ms": "" is not an IP address`}},
		{agentCtlOptions{peerDelays: []string{"172.18.0.3=1ms", "172.18.0.4=5s"}}, []string{`--peer-delay "172.18.0.4=5s": `, `delay "5s"`, "maximum"}},
		{agentCtlOptions{peerDelays: []string{"172.18.0.3="}}, []string{`--peer-delay "172.18.0.3=": `, "empty"}},
	} {
		_, err := c.o.request("set")
		var ue cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", c.o, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q lacks %q", c.o, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: not one line: %q", c.o, err)
		}
	}
}

// `agent ctl` sends each operation's request over the agent's socket and
// prints the reply as one JSON line.
func TestAgentCtlTalksToTheAgent(t *testing.T) {
	a := startStandInAgent(t, echoReply)
	for _, c := range []struct {
		args []string
		want netem.Request
	}{
		{[]string{"set", "--delay", "250us", "--peer", "172.18.0.3,172.18.0.4", "--floor", "20us"},
			netem.Request{Op: "set", DelayNs: 250_000, Peers: []string{"172.18.0.3", "172.18.0.4"}, FloorNs: 20_000}},
		{[]string{"set", "--peer-delay", "172.18.0.3=125us", "--peer-delay", "172.18.0.4=0.25"},
			netem.Request{Op: "set", PeerDelays: []netem.PeerDelayJSON{{Peer: "172.18.0.3", DelayNs: 125_000}, {Peer: "172.18.0.4", DelayNs: 250_000}}}},
		{[]string{"show"}, netem.Request{Op: "show"}},
		{[]string{"clear"}, netem.Request{Op: "clear"}},
		{[]string{"ping"}, netem.Request{Op: "ping"}},
	} {
		before := len(a.requests())
		code, out, errs := execLine(context.Background(), append([]string{"agent", "ctl", "--socket", a.path}, c.args...)...)
		if code != 0 {
			t.Errorf("%v: exit %d %q", c.args, code, errs)
			continue
		}
		got := a.requests()
		if len(got) != before+1 || !reflect.DeepEqual(got[len(got)-1], c.want) {
			t.Errorf("%v: the agent got %+v, want %+v", c.args, got[before:], c.want)
		}
		var rep netem.Reply
		if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.OK || rep.Backend != "userspace" || rep.DelayNs != c.want.DelayNs {
			t.Errorf("%v: printed %q (%v)", c.args, out, err)
		}
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("%v: not one JSON line: %q", c.args, out)
		}
	}
}

// A refusal from the agent is a failure (exit 1): ctl still prints the
// reply, and the error carries the agent's words.
func TestAgentCtlAgentRefuses(t *testing.T) {
	a := startStandInAgent(t, func(req netem.Request) netem.Reply {
		return netem.Reply{Backend: "userspace", Error: "shaper loop died: queue gone"}
	})
	code, out, errs := execLine(context.Background(), "agent", "ctl", "--socket", a.path, "clear")
	var rep netem.Reply
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.OK || rep.Error != "shaper loop died: queue gone" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errs, "agent: shaper loop died: queue gone") {
		t.Errorf("stderr %q", errs)
	}
}

// Without an agent on the socket ctl fails (exit 1) and says where it
// looked; bad input never reaches the agent (exit 2).
func TestAgentCtlFailures(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.sock")
	code, out, errs := execLine(context.Background(), "agent", "ctl", "--socket", missing, "ping")
	if code != 1 || !strings.Contains(errs, "connect to agent at "+missing) {
		t.Errorf("no agent: exit %d %q", code, errs)
	}
	var rep netem.Reply
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.OK {
		t.Errorf("no agent: printed %q (%v)", out, err)
	}

	a := startStandInAgent(t, echoReply)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set"}, "ctl set needs --delay"},
		{[]string{"set", "--delay", "1ms", "--peer-delay", "172.18.0.3=1ms"}, "ctl set needs --delay"},
		{[]string{"flush"}, `ctl "flush": use set, clear, show or ping`},
		{[]string{"set", "--delay", "3s"}, `--delay: delay "3s"`},
		{[]string{"set", "--delay", "1ms", "--floor", "x"}, "--floor: "},
		{[]string{"set", "--peer-delay", "app=1ms"}, `"app" is not an IP address`},
		{[]string{"set", "--peer-delay", "172.18.0.3:1ms"}, "use IP=DELAY"},
	} {
		code, out, errs := execLine(context.Background(), append([]string{"agent", "ctl", "--socket", a.path}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with %q", c.args, code, out, errs, c.want)
		}
	}
	if code, _, _ := execLine(context.Background(), "agent", "ctl", "--socket", a.path); code != 2 {
		t.Error("ctl without an operation succeeded")
	}
	if n := len(a.requests()); n != 0 {
		t.Errorf("the agent got %d requests from bad input", n)
	}
}

// `agent session` runs ctl calls sent on its stdin against the agent and
// frames their output and exit status; it ends when its stdin ends.
func TestAgentSessionCommand(t *testing.T) {
	a := startStandInAgent(t, echoReply)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cmd := NewCmd()
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetIn(inR)
	cmd.SetOut(outW)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"session"})
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(context.Background())
		outW.Close()
		done <- err
	}()
	write := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Error(err)
		}
	}
	write(`{"id":1,"args":["ctl","--socket",` + jsonString(a.path) + `,"set","--delay","1ms"]}`)
	write(`{"id":2,"args":["ctl","--socket",` + jsonString(a.path) + `,"set"]}`)

	out, exit := map[uint64]string{}, map[uint64]int{}
	dec := json.NewDecoder(outR)
	for len(exit) < 2 {
		var f session.Frame
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("frames: %v", err)
		}
		out[f.ID] += string(f.Out)
		if f.Done {
			exit[f.ID] = f.Exit
		}
	}
	inW.Close()
	if _, err := io.Copy(io.Discard, outR); err != nil {
		t.Error(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var rep netem.Reply
	if exit[1] != 0 || json.Unmarshal([]byte(out[1]), &rep) != nil || !rep.OK || rep.DelayNs != 1_000_000 {
		t.Errorf("call 1: exit %d, stdout %q", exit[1], out[1])
	}
	if exit[2] != 2 || out[2] != "" {
		t.Errorf("call 2: exit %d, stdout %q; want 2 and nothing", exit[2], out[2])
	}
	if got := a.requests(); len(got) != 1 || got[0].DelayNs != 1_000_000 {
		t.Errorf("the agent got %+v", got)
	}
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
