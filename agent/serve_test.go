package agent

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/netem"
)

// unreachableSocket is a socket path whose folder cannot be made (it lies
// under a regular file), so that `agent serve` stops before it creates a
// shaper even if its flags were wrongly accepted.
func unreachableSocket(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(f, "run", "agent.sock")
}

// `agent serve` refuses a bad shaper, queue, hook, wire address or --hot
// with a one-line usage error (exit 2) that names the flag and value.
func TestAgentServeRefusesBadFlags(t *testing.T) {
	sock := unreachableSocket(t)
	wire := func(more ...string) []string {
		return append([]string{"--hook", "wire", "--bridge", "br-1", "--label", "run1/app"}, more...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shaper", "tc"}, `--shaper "tc": use auto, kernel or userspace`},
		{[]string{"--shaper", ""}, `--shaper "": use auto, kernel or userspace`},
		{[]string{"--queue", "65536"}, "--queue 65536: use 0..65535"},
		{[]string{"--hook", "forward"}, `--hook "forward": use wire, ingress or egress`},
		{[]string{"--hook", ""}, `--hook "": use wire, ingress or egress`},
		{[]string{"--hook", "wire"}, "--hook wire needs --bridge, --src and --label"},
		{[]string{"--hook", "wire", "--bridge", "br-1", "--src", "172.18.0.3"}, "--hook wire needs --bridge, --src and --label"},
		{[]string{"--hook", "wire", "--src", "172.18.0.3", "--label", "l"}, "--hook wire needs --bridge, --src and --label"},
		{wire(), "--hook wire needs --bridge, --src and --label"},
		{wire("--src", "app"), `--src "app": give the shaped container's IP address`},
		{wire("--src", "172.18.0.0/16"), `--src "172.18.0.0/16": give the shaped container's IP address`},
		{[]string{"--hot", "-1ms"}, "--hot -1ms: use 0 (sleep between packets) up to 1s"},
		{[]string{"--hot", "1.5s"}, "--hot 1.5s: use 0 (sleep between packets) up to 1s"},
	} {
		args := append([]string{"agent", "serve", "--socket", sock}, c.args...)
		code, out, errs := execLine(context.Background(), args...)
		if code != 2 || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with %q", c.args, code, out, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: the error is not one line: %q", c.args, errs)
		}
	}
}

// prepare accepts each shaper, hook and the bounds of --queue and --hot,
// and settles the wire hook's address and the queue number.
func TestAgentServePrepareSettlesOptions(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     agentServeOptions
		src   netip.Addr
		queue uint16
	}{
		{"defaults", agentServeOptions{opts: netem.Options{Backend: "auto", Hook: defaultHook, Hot: defaultHot}}, netip.Addr{}, 0},
		{"kernel egress", agentServeOptions{opts: netem.Options{Backend: "kernel", Hook: netem.HookEgress}, queue: 7}, netip.Addr{}, 7},
		{"userspace top bounds", agentServeOptions{opts: netem.Options{Backend: "userspace", Hook: netem.HookIngress, Hot: time.Second}, queue: 65535}, netip.Addr{}, 65535},
		{"wire IPv4", agentServeOptions{opts: netem.Options{Backend: "userspace", Hook: netem.HookWire, Bridge: "br-1", Label: "run1/app"}, src: "172.18.0.3", queue: 3},
			netip.MustParseAddr("172.18.0.3"), 3},
		{"wire IPv6", agentServeOptions{opts: netem.Options{Backend: "auto", Hook: netem.HookWire, Bridge: "br-1", Label: "run1/db"}, src: "fd00::3"},
			netip.MustParseAddr("fd00::3"), 0},
	} {
		o := c.o
		if err := o.prepare(); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if o.opts.Src != c.src || o.opts.QueueNum != c.queue {
			t.Errorf("%s: src %v queue %d, want %v and %d", c.name, o.opts.Src, o.opts.QueueNum, c.src, c.queue)
		}
	}
}

// A wire hook whose address does not parse leaves no address behind, and
// the error is the usage error type.
func TestAgentServePrepareWireErrorType(t *testing.T) {
	o := agentServeOptions{opts: netem.Options{Backend: "auto", Hook: netem.HookWire, Bridge: "b", Label: "l"}, src: "172.18.0"}
	err := o.prepare()
	var ue cli.UsageError
	if !errors.As(err, &ue) || o.opts.Src.IsValid() {
		t.Errorf("got %v (src %v), want a usage error and no address", err, o.opts.Src)
	}
}

// With good flags, serve fails (exit 1, not 2) when it cannot make the
// socket's folder, before it touches any shaping.
func TestAgentServeSocketFolderFails(t *testing.T) {
	sock := unreachableSocket(t)
	code, out, errs := execLine(context.Background(), "agent", "serve", "--shaper", "userspace", "--socket", sock)
	if code != 1 || out != "" || !strings.Contains(errs, filepath.Dir(filepath.Dir(sock))) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming the folder", code, out, errs)
	}
	if code, _, errs := execLine(context.Background(), "agent", "serve", "--socket", sock, "extra"); code == 0 || !strings.Contains(errs, `"extra"`) {
		t.Errorf("serve with an argument: exit %d %q", code, errs)
	}
}
