package enginefake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// The fake itself behaves like the engine where rttlab relies
// on it; these tests pin that down so a test passing on the fake means
// something.
func TestBehavesLikeAnEngine(t *testing.T) {
	ctx := context.Background()
	f := New()
	f.AddImage("img:1", nil)

	if _, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "missing:1"}); err == nil || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("missing image: %v", err)
	}
	if _, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "img:1", Network: "nonet"}); err == nil {
		t.Fatal("a missing network must be refused")
	}
	nid, err := f.CreateNetwork(ctx, "net", map[string]string{engine.LabelRun: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateNetwork(ctx, "net", nil); err == nil {
		t.Fatal("duplicate network name accepted")
	}
	a, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "img:1", Network: "net", Labels: map[string]string{engine.LabelRun: "r1", engine.LabelService: "db"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "a", Image: "img:1"}); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("exec in a created container: %v", err)
	}
	side, err := f.CreateContainer(ctx, engine.ContainerSpec{Name: "side", Image: "img:1", NetworkMode: "container:" + a})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartContainer(ctx, side); err == nil {
		t.Fatal("joining the namespace of a stopped container must fail")
	}
	if err := f.StartContainer(ctx, a); err != nil {
		t.Fatal(err)
	}
	ins, err := f.InspectContainer(ctx, a)
	if err != nil || !ins.State.Running || ins.NetworkSettings.Networks["net"].IPAddress == "" {
		t.Fatalf("inspect %+v %v", ins.State, err)
	}

	// Exec: handlers by longest prefix, stdin passed, unknown commands 127.
	f.Handle("rttlab agent", func(ctx context.Context, x *Call) (int, error) { return 3, nil })
	f.Handle("rttlab agent ctl", func(ctx context.Context, x *Call) (int, error) {
		fmt.Fprintf(x.Stdout, "%s|%s|%s", x.Flag("--delay"), x.Stdin, x.Service())
		return 0, nil
	})
	var out bytes.Buffer
	code, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "set", "--delay", "5ns"}, Stdin: strings.NewReader("in"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "5ns|in|db" {
		t.Fatalf("ctl exec: %d %v %q", code, err, out.String())
	}
	if code, _ := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ping"}}); code != 3 {
		t.Fatalf("prefix handler: code %d", code)
	}
	var errb bytes.Buffer
	if code, _ := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"nope"}, Stderr: &errb}); code != 127 || len(f.Unhandled) != 1 {
		t.Fatalf("unknown command: %d %q", code, errb.String())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Exec(cctx, a, engine.ExecSpec{Cmd: []string{"rttlab", "agent"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("exec with a cancelled context: %v", err)
	}

	// Faults are used up; crashes stop containers; logs are kept.
	boom := errors.New("boom")
	ft := f.FailOn("Exec", "agent ping", 1, boom)
	if _, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"rttlab", "agent", "ping"}}); !errors.Is(err, boom) {
		t.Fatalf("fault: %v", err)
	}
	if _, err := f.Exec(ctx, a, engine.ExecSpec{Cmd: []string{"rttlab", "agent", "ping"}}); err != nil || ft.Hits != 1 {
		t.Fatalf("fault used once: %v, hits %d", err, ft.Hits)
	}
	if n := f.Exit("a", 2, "FATAL: out of memory\n"); n != 1 {
		t.Fatalf("exit hit %d containers", n)
	}
	if in, err := f.InspectContainer(ctx, a); err != nil || in.State.Running || in.State.ExitCode != 2 {
		t.Fatalf("inspect after exit: %+v, %v", in.State, err)
	}
	if logs, err := f.Logs(ctx, a, 10); err != nil || !strings.Contains(logs, "out of memory") {
		t.Fatalf("logs after exit: %q, %v", logs, err)
	}

	// Labels filter like the engine's: key only, or key=value.
	if cs, _ := f.ListContainers(ctx, map[string]string{engine.LabelRun: ""}); len(cs) != 1 || cs[0].Names[0] != "/a" || cs[0].State != "exited" {
		t.Fatalf("list by key: %+v", cs)
	}
	if cs, _ := f.ListContainers(ctx, map[string]string{engine.LabelRun: "r2"}); len(cs) != 0 {
		t.Fatalf("list by value: %+v", cs)
	}
	// A network with a container attached stays.
	if err := f.RemoveNetwork(ctx, nid); err == nil || !strings.Contains(err.Error(), "active endpoints") {
		t.Fatalf("remove busy network: %v", err)
	}
	for _, id := range []string{a, side} {
		if err := f.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.RemoveNetwork(ctx, nid); err != nil {
		t.Fatal(err)
	}
	f.RequireEmpty(t)
}
