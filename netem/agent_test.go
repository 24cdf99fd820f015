package netem

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeShaper records calls; it stands in for the Shaper interface only.
type fakeShaper struct {
	mu      sync.Mutex
	sets    []Config
	clears  int
	closed  bool
	setErr  error
	done    chan struct{}
	loopErr error
}

func (f *fakeShaper) Set(_ context.Context, c Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.setErr != nil {
		return f.setErr
	}
	f.sets = append(f.sets, c)
	return nil
}
func (f *fakeShaper) Clear(context.Context) error { f.mu.Lock(); f.clears++; f.mu.Unlock(); return nil }
func (f *fakeShaper) Close() error                { f.mu.Lock(); f.closed = true; f.mu.Unlock(); return nil }
func (f *fakeShaper) Backend() string             { return "fake" }
func (f *fakeShaper) Done() <-chan struct{}       { return f.done }
func (f *fakeShaper) Err() error {
	select {
	case <-f.done:
		return f.loopErr
	default:
		return nil
	}
}

func startAgent(t *testing.T, sh Shaper) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := listenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{shaper: sh, info: Info{Backend: "fake", Why: "test", Link: "eth0"}}
	done := make(chan error, 1)
	go func() { done <- a.serve(ln) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return path
}

func TestAgentRequests(t *testing.T) {
	sh := &fakeShaper{done: make(chan struct{})}
	path := startAgent(t, sh)
	ctx := context.Background()

	rep, err := Ctl(ctx, path, Request{Op: "ping"})
	if err != nil || !rep.OK || rep.Backend != "fake" || rep.Why != "test" || rep.Active {
		t.Fatalf("ping = %+v, %v", rep, err)
	}
	rep, err = Ctl(ctx, path, Request{Op: "set", DelayNs: 500000, Peers: []string{"172.18.0.2", "::ffff:10.0.0.1"}})
	if err != nil || !rep.OK || !rep.Active || rep.DelayNs != 500000 || rep.Scope != "path" ||
		strings.Join(rep.Peers, ",") != "172.18.0.2,10.0.0.1" {
		t.Fatalf("set = %+v, %v", rep, err)
	}
	if len(sh.sets) != 1 || sh.sets[0].Delay != 500*time.Microsecond || len(sh.sets[0].Peers) != 2 {
		t.Fatalf("shaper got %+v", sh.sets)
	}
	rep, err = Ctl(ctx, path, Request{Op: "set", PeerDelays: []PeerDelayJSON{{Peer: "172.18.0.2", DelayNs: 125000}}, FloorNs: 300000})
	if err != nil || rep.FloorNs != 300000 || len(rep.PeerDelays) != 1 || rep.PeerDelays[0].DelayNs != 125000 {
		t.Fatalf("set with floor = %+v, %v", rep, err)
	}
	if len(sh.sets) != 2 || sh.sets[1].Floor != 300*time.Microsecond {
		t.Fatalf("shaper got %+v", sh.sets)
	}
	rep, err = Ctl(ctx, path, Request{Op: "set", DelayNs: 0})
	if err != nil || rep.Scope != "interface" || rep.DelayNs != 0 || !rep.Active || rep.FloorNs != 0 {
		t.Fatalf("set 0 = %+v, %v", rep, err)
	}
	rep, err = Ctl(ctx, path, Request{Op: "show"})
	if err != nil || rep.Scope != "interface" || !rep.Active {
		t.Fatalf("show = %+v, %v", rep, err)
	}
	for _, bad := range []Request{
		{Op: "set", DelayNs: -1},
		{Op: "set", DelayNs: int64(2 * time.Second)},
		{Op: "set", DelayNs: 1000, Peers: []string{"not-an-ip"}},
		{Op: "set", DelayNs: 1000, Peers: []string{"0.0.0.0"}},
		{Op: "set", DelayNs: 1000, FloorNs: -1},
		{Op: "set", DelayNs: int64(time.Second), FloorNs: 1},
		{Op: "frobnicate"},
	} {
		rep, err := Ctl(ctx, path, bad)
		if err == nil || rep.OK || rep.Error == "" || !strings.Contains(err.Error(), rep.Error) {
			t.Errorf("%+v accepted: %+v, %v", bad, rep, err)
		}
	}
	if len(sh.sets) != 3 {
		t.Fatalf("bad requests reached the shaper: %+v", sh.sets)
	}
	sh.setErr = errors.New("boom")
	if _, err := Ctl(ctx, path, Request{Op: "set", DelayNs: 1000}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("shaper error not reported: %v", err)
	}
	if rep, _ := Ctl(ctx, path, Request{Op: "show"}); rep.DelayNs != 0 {
		t.Fatalf("failed set changed the state: %+v", rep)
	}
	rep, err = Ctl(ctx, path, Request{Op: "clear"})
	if err != nil || rep.Active || rep.Scope != "" || sh.clears != 1 {
		t.Fatalf("clear = %+v, %v (clears %d)", rep, err, sh.clears)
	}
	// Malformed JSON gets an error reply.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("{nope\n"))
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	if !strings.Contains(string(buf[:n]), `"ok":false`) || !strings.Contains(string(buf[:n]), "bad request") {
		t.Fatalf("malformed request reply %q", buf[:n])
	}
}

func TestAgentReportsDeadLoop(t *testing.T) {
	sh := &fakeShaper{done: make(chan struct{}), loopErr: errors.New("read NFQUEUE 1: bad file descriptor")}
	path := startAgent(t, sh)
	close(sh.done)
	for _, op := range []string{"show", "set", "ping"} {
		rep, err := Ctl(context.Background(), path, Request{Op: op, DelayNs: 1000})
		if err == nil || rep.OK || !strings.Contains(rep.Error, "shaper loop died") || !strings.Contains(rep.Error, "bad file descriptor") {
			t.Fatalf("%s after loop death = %+v, %v", op, rep, err)
		}
	}
	if len(sh.sets) != 0 {
		t.Fatal("set reached a dead shaper")
	}
}

func TestListenUnixRefusesLiveSocket(t *testing.T) {
	path := startAgent(t, &fakeShaper{done: make(chan struct{})})
	if _, err := listenUnix(path); err == nil || !strings.Contains(err.Error(), "another agent") {
		t.Fatalf("second listener: %v", err)
	}
}

func TestCtlNoAgent(t *testing.T) {
	_, err := Ctl(context.Background(), filepath.Join(t.TempDir(), "none.sock"), Request{Op: "ping"})
	if err == nil || !strings.Contains(err.Error(), "connect to agent") {
		t.Fatalf("err = %v", err)
	}
}
