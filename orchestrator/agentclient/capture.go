package agentclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rttlab/rttlab/workloads"
)

// CaptureOptions is a packet capture (`agent capture`) on the interface
// Iface of the client's container: the packets between Local and Peers,
// up to MaxPackets, for at most For; it stops early when its input ends.
type CaptureOptions struct {
	Iface      string
	Local      string
	Peers      []string
	For        time.Duration
	MaxPackets int
}

// CaptureArgs is the capture verb's command line for o.
func CaptureArgs(o CaptureOptions) []string {
	return []string{"--iface", o.Iface, "--local", o.Local, "--peer", strings.Join(o.Peers, ","),
		"--for", o.For.String(), "--max-packets", fmt.Sprint(o.MaxPackets), "--stop-on-eof"}
}

// Capture runs a capture until stdin closes (or o.For and a minute pass):
// its answer goes to stdout (DecodeCapture reads it) and its stderr, with
// the line that says it captures (workloads.CaptureReady), to stderr. It
// returns the capture's exit status; only a failed exec is an error.
func (c Client) Capture(ctx context.Context, o CaptureOptions, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	res, err := c.Exec(ctx, Call{Verb: "capture", Args: CaptureArgs(o), Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Timeout: o.For + time.Minute, AnyExit: true})
	return res.Code, err
}

// DecodeCapture decodes a capture's answer.
func DecodeCapture(out []byte) (workloads.Capture, error) {
	var cp workloads.Capture
	err := json.Unmarshal(out, &cp)
	return cp, err
}
