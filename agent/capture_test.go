package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/workloads"
)

func TestAgentCaptureInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--for", "1s"}, "--peer"},
		{[]string{"--peer", "10.0.0.2,db", "--for", "1s"}, "--peer \"db\""},
		{[]string{"--peer", "db", "--for", "1s"}, "--peer \"db\""},
		{[]string{"--peer", "fd00::1", "--for", "1s"}, "IPv4"},
		{[]string{"--peer", "10.0.0.2", "--local", "x", "--for", "1s"}, "--local"},
		{[]string{"--peer", "10.0.0.2"}, "--for"},
		{[]string{"--peer", "10.0.0.2", "--for", "2h"}, "--for"},
		{[]string{"--peer", "10.0.0.2", "--for", "1s", "--max-packets", "0"}, "--max-packets"},
	} {
		_, err := run(t, append([]string{"capture"}, c.args...)...)
		var ue cli.UsageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error about %s", c.args, err, c.want)
		}
	}
}

// With --stop-on-eof the capture ends when stdin closes: it says it
// started on stderr and prints one JSON capture on stdout.
func TestAgentCaptureStopsOnEOF(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (packet socket)")
	}
	o := &agentCaptureOptions{iface: "lo", peers: []string{"127.0.0.1"}, dur: time.Minute, maxPackets: 10, stopOnEOF: true}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := o.run(context.Background(), strings.NewReader(""), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(errb.String(), workloads.CaptureReady+" lo: 127.0.0.1 <-> 127.0.0.1\n") {
		t.Errorf("stderr %q", errb.String())
	}
	var c workloads.Capture
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c.Iface != "lo" || c.Peer.String() != "127.0.0.1" || c.EndNs < c.StartNs || c.Packets == nil {
		t.Errorf("capture %s: %+v, %v", out.String(), c, err)
	}
	if strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
		t.Errorf("not one compact line: %q", out.String())
	}
}
