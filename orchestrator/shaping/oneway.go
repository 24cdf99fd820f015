package shaping

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/workloads"
)

// The one-way check: both agents capture the app<->database packets on
// their container's interface while a setting is measured, with kernel
// stamps on one clock; pairing the packets that left one side with their
// arrival at the other gives each direction's one-way delay as the
// receiver's kernel saw it, independently of process wake-ups and of the
// shaper's own statistics.
const (
	// DefaultCaptureIface is the interface inside the containers.
	DefaultCaptureIface = "eth0"
	// DefaultCaptureMaxPackets caps each capture of one setting.
	DefaultCaptureMaxPackets = 100000
	// captureFor bounds a capture that is never told to stop (the
	// longest probes of a setting fit well inside).
	captureFor = 15 * time.Minute
	// captureOutputMax bounds what a capture may print.
	captureOutputMax = 64 << 20
	captureStart     = 30 * time.Second
	captureStop      = 30 * time.Second
)

// Directions of the one-way check, in the order of ShapeRow.OneWay.
const (
	DirAppToDB = workloads.DirAppToDB
	DirDBToApp = workloads.DirDBToApp
)

// OneWayDirection is what the two captures of one setting showed for one
// direction.
type OneWayDirection struct {
	Direction string // DirAppToDB or DirDBToApp
	workloads.OneWay
	// AddedP50Ms is the p50 one-way delay minus the baseline's (the 0 ms
	// setting; for the 0 ms row, the row without shaper); HaveAdded when
	// both had matched packets.
	AddedP50Ms float64
	HaveAdded  bool
}

// addOneWayBaseline fills in r's added one-way delays against base.
func addOneWayBaseline(r *ShapeRow, base ShapeRow) {
	for i := range r.OneWay {
		if i >= len(base.OneWay) || base.OneWay[i].Direction != r.OneWay[i].Direction {
			continue
		}
		if r.OneWay[i].Matched > 0 && base.OneWay[i].Matched > 0 {
			r.OneWay[i].AddedP50Ms = r.OneWay[i].P50Ms - base.OneWay[i].P50Ms
			r.OneWay[i].HaveAdded = true
		}
	}
}

// PairCapture is the pair of captures running while a setting is
// measured: the agents' of two members (the app's and the database's),
// each of the packets between the two.
type PairCapture struct {
	a, b *captureRun
}

// StartPairCapture starts `rttlab agent capture` in the agents of the
// members of roles a and b concurrently, on iface, and returns once both
// capture (or the first error, both stopped).
func (sh *Shaping) StartPairCapture(ctx context.Context, d runtime.Execer, a, b, iface string, maxPackets int) (*PairCapture, error) {
	ma, mb := sh.Stack.Role(a), sh.Stack.Role(b)
	aa, ab := sh.Agents[a], sh.Agents[b]
	if ma == nil || mb == nil || aa == nil || ab == nil {
		return nil, fmt.Errorf("capture: the stack has no agents of %s and %s", a, b)
	}
	c := &PairCapture{
		a: startCapture(ctx, d, aa.ID, aa.Name, iface, ma.IP, maxPackets, mb.IP),
		b: startCapture(ctx, d, ab.ID, ab.Name, iface, mb.IP, maxPackets, ma.IP),
	}
	if err := waitReady(ctx, c.a, c.b); err != nil {
		return nil, err
	}
	return c, nil
}

// waitReady waits until every capture captures; on the first error it
// stops them all.
func waitReady(ctx context.Context, runs ...*captureRun) error {
	for _, r := range runs {
		if err := r.waitReady(ctx); err != nil {
			abortAll(runs...)
			return err
		}
	}
	return nil
}

// abortAll stops captures, keeping nothing (safe after they ended).
func abortAll(runs ...*captureRun) {
	for _, r := range runs {
		r.stdin.Close()
		r.cancel()
		<-r.done
	}
}

// Finish stops both captures and returns what each saw: a's, then b's.
func (c *PairCapture) Finish() (a, b workloads.Capture, err error) {
	c.a.stdin.Close()
	c.b.stdin.Close()
	if a, err = c.a.result(); err != nil {
		c.Abort()
		return a, b, err
	}
	b, err = c.b.result()
	return a, b, err
}

// oneWay stops both captures of the app (a) and the database (b) and
// pairs their packets per direction.
func (c *PairCapture) oneWay() ([]OneWayDirection, error) {
	appCap, dbCap, err := c.Finish()
	if err != nil {
		return nil, err
	}
	return []OneWayDirection{
		{Direction: DirAppToDB, OneWay: workloads.MatchOneWay(appCap, dbCap)},
		{Direction: DirDBToApp, OneWay: workloads.MatchOneWay(dbCap, appCap)},
	}, nil
}

// Abort stops both captures, keeping nothing (safe after Finish).
func (c *PairCapture) Abort() { abortAll(c.a, c.b) }

// captureRun is one `rttlab agent capture` running in a container (an
// agent, or the load client); closing stdin stops it.
type captureRun struct {
	name   string // the container's, for errors
	stdin  *io.PipeWriter
	cancel context.CancelFunc
	out    cappedBuffer
	errb   *readyWriter
	done   chan struct{}
	code   int
	err    error
}

// startCapture starts a capture in container id (named name) of the
// packets between local and peers.
func startCapture(ctx context.Context, d runtime.Execer, id, name, iface, local string, maxPackets int, peers ...string) *captureRun {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	c := &captureRun{name: name, stdin: pw, cancel: cancel, out: cappedBuffer{max: captureOutputMax},
		errb: &readyWriter{prefix: workloads.CaptureReady, ready: make(chan struct{})}, done: make(chan struct{})}
	o := agentclient.CaptureOptions{Iface: iface, Local: local, Peers: peers, For: captureFor, MaxPackets: maxPackets}
	go func() {
		defer close(c.done)
		c.code, c.err = agentclient.Client{D: d, ID: id, Name: name}.Capture(ctx, o, pr, &c.out, c.errb)
		pr.Close() // ends the copy of stdin into the exec
	}()
	return c
}

// waitReady returns once the capture says it captures, or why it does not.
func (c *captureRun) waitReady(ctx context.Context) error {
	t := time.NewTimer(captureStart)
	defer t.Stop()
	select {
	case <-c.errb.ready:
		return nil
	case <-c.done:
		return c.failure("ended before it started capturing")
	case <-ctx.Done():
		return fmt.Errorf("one-way capture in %s: %w", c.name, ctx.Err())
	case <-t.C:
		return fmt.Errorf("one-way capture in %s did not start within %s", c.name, captureStart)
	}
}

// result waits for the capture to end (its stdin closed) and decodes it.
func (c *captureRun) result() (workloads.Capture, error) {
	var res workloads.Capture
	t := time.NewTimer(captureStop)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.cancel()
		<-c.done
		return res, fmt.Errorf("one-way capture in %s did not stop within %s of its input closing", c.name, captureStop)
	}
	if c.err != nil || c.code != 0 {
		return res, c.failure("failed")
	}
	if c.out.over {
		return res, fmt.Errorf("one-way capture in %s printed more than %d MiB", c.name, captureOutputMax>>20)
	}
	res, err := agentclient.DecodeCapture(c.out.b.Bytes())
	if err != nil {
		return res, fmt.Errorf("one-way capture in %s: its output (%d bytes) is not a capture", c.name, c.out.b.Len())
	}
	return res, nil
}

// failure says why a capture ended: the exec's error, or its stderr.
func (c *captureRun) failure(what string) error {
	if c.err != nil {
		return fmt.Errorf("one-way capture in %s %s: %w", c.name, what, c.err)
	}
	msg := strings.TrimPrefix(strings.TrimSpace(c.errb.String()), "rttlab: ")
	if msg == "" {
		msg = fmt.Sprintf("exited %d with no output", c.code)
	}
	return fmt.Errorf("one-way capture in %s %s: %s", c.name, what, msg)
}

// cappedBuffer keeps up to max bytes and notes when more came.
type cappedBuffer struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		w.over = true
		return len(p), nil
	}
	return w.b.Write(p)
}

// readyWriter keeps a command's stderr (the first 64 KiB) and closes
// ready at the first line that starts with prefix.
type readyWriter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	prefix string
	ready  chan struct{}
	fired  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := 64<<10 - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	if !w.fired {
		for _, line := range strings.SplitAfter(w.b.String(), "\n") {
			if strings.HasSuffix(line, "\n") && strings.HasPrefix(line, w.prefix) {
				w.fired = true
				close(w.ready)
				break
			}
		}
	}
	return len(p), nil
}

// String returns the stderr kept, without the ready line.
func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keep []string
	for _, line := range strings.SplitAfter(w.b.String(), "\n") {
		if !strings.HasPrefix(line, w.prefix) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
