package shaping

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/rttlab/rttlab/internal/session"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Sessions is a runtime's exec (runtime.Execer) whose short agent calls
// (ctl, ping, capture: session.Verbs) go through one long-lived `rttlab
// agent session` per member instead of an exec each: an exec costs the
// runtime tens of milliseconds (Docker: a process started in the
// container's namespaces; Kubernetes: a stream opened through the API
// server), a call in a session a line each way. Every other call, and
// every call in a member whose session cannot start (an agent image
// without the verb), is a plain exec. Close ends the sessions.
type Sessions struct {
	runtime.Execer
	mu   sync.Mutex
	open map[string]*agentSession // by member ID
	// refused marks members whose session would not start: plain execs
	// from then on.
	refused map[string]bool
}

// WithSessions wraps d.
func WithSessions(d runtime.Execer) *Sessions {
	return &Sessions{Execer: d, open: map[string]*agentSession{}, refused: map[string]bool{}}
}

// sessionStart bounds how long a session may take to answer its first
// call before the container is given plain execs.
const sessionStart = 20 * time.Second

// Exec runs spec in container id: through the container's session when
// spec is a session verb, else (or when there is no session) as an exec.
func (s *Sessions) Exec(ctx context.Context, id string, spec runtime.ExecSpec) (int, error) {
	args, ok := sessionArgs(spec)
	if !ok {
		return s.Execer.Exec(ctx, id, spec)
	}
	as, err := s.session(ctx, id)
	if err != nil {
		return s.Execer.Exec(ctx, id, spec)
	}
	code, err := as.call(ctx, args, spec)
	if errors.Is(err, errSessionGone) {
		s.drop(id, as)
	}
	return code, err
}

// sessionArgs are the agent arguments of spec when a session can run it:
// `rttlab agent VERB ...` of a session verb, with no environment or user
// of its own.
func sessionArgs(spec runtime.ExecSpec) ([]string, bool) {
	c := spec.Cmd
	if len(c) < 3 || c[0] != agentclient.AgentBin || c[1] != "agent" || len(spec.Env) > 0 || spec.User != "" {
		return nil, false
	}
	return c[2:], slices.Contains(session.Verbs, c[2])
}

// session returns the container's session, starting it on first use.
func (s *Sessions) session(ctx context.Context, id string) (*agentSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused[id] {
		return nil, errSessionGone
	}
	if as := s.open[id]; as != nil {
		return as, nil
	}
	as, err := startSession(ctx, s.Execer, id)
	if err != nil {
		s.refused[id] = true
		return nil, err
	}
	s.open[id] = as
	return as, nil
}

func (s *Sessions) drop(id string, as *agentSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id] == as {
		delete(s.open, id)
	}
}

// Close ends every session (their processes exit when their stdin
// closes).
func (s *Sessions) Close() {
	s.mu.Lock()
	all := s.open
	s.open = map[string]*agentSession{}
	s.mu.Unlock()
	for _, as := range all {
		as.close()
	}
}

var errSessionGone = errors.New("agent session ended")

// agentSession is one `rttlab agent session` running in a container.
type agentSession struct {
	stdin  *io.PipeWriter
	wmu    sync.Mutex // orders the frames written to stdin
	mu     sync.Mutex // guards next, calls, err and stderr
	next   uint64
	calls  map[uint64]*sessionCall
	err    error // why the session ended
	done   chan struct{}
	cancel context.CancelFunc
	stderr bytes.Buffer
}

// sessionCall is one call waiting for its frames.
type sessionCall struct {
	spec runtime.ExecSpec
	exit chan int
}

// startSession starts the session in container id and checks that it
// answers (a `ctl` call that needs no shaper: usage of an unknown op
// answers 2 at once).
func startSession(ctx context.Context, d runtime.Execer, id string) (*agentSession, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pr, pw := io.Pipe()
	as := &agentSession{stdin: pw, calls: map[uint64]*sessionCall{}, done: make(chan struct{}), cancel: cancel}
	out, in := io.Pipe()
	go as.readFrames(out)
	go func() {
		err := agentclient.Client{D: d, ID: id}.Session(sctx, pr, in, &syncWriter{mu: &as.mu, w: &as.stderr})
		pr.Close()
		in.CloseWithError(errors.Join(errSessionGone, err))
	}()
	pctx, pcancel := context.WithTimeout(ctx, sessionStart)
	defer pcancel()
	var stderr bytes.Buffer
	code, err := as.call(pctx, []string{"ctl", "none"}, runtime.ExecSpec{Stderr: &stderr})
	if err != nil || code != 2 {
		as.close()
		return nil, fmt.Errorf("agent session in %s does not answer (%d, %v)", engine.ShortID(id), code, err)
	}
	return as, nil
}

// call runs args in the session: spec's stdin is copied to the call
// (only its end matters: a capture stops on it), its output to spec's
// writers, and the call's exit status returned.
func (as *agentSession) call(ctx context.Context, args []string, spec runtime.ExecSpec) (int, error) {
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	c := &sessionCall{spec: spec, exit: make(chan int, 1)}
	as.mu.Lock()
	if as.err != nil {
		as.mu.Unlock()
		return -1, as.err
	}
	as.next++
	id := as.next
	as.calls[id] = c
	as.mu.Unlock()
	if err := as.send(session.Frame{ID: id, Args: args}); err != nil {
		return -1, err
	}
	if spec.Stdin == nil {
		_ = as.send(session.Frame{ID: id, EOF: true}) // no stdin: an empty one
	} else {
		go func() {
			_, _ = io.Copy(io.Discard, spec.Stdin)
			_ = as.send(session.Frame{ID: id, EOF: true})
		}()
	}
	select {
	case code := <-c.exit:
		return code, nil
	case <-as.done:
		return -1, as.err
	case <-ctx.Done():
		as.mu.Lock()
		delete(as.calls, id)
		as.mu.Unlock()
		_ = as.send(session.Frame{ID: id, Cancel: true})
		return -1, fmt.Errorf("agent %s: %w", args[0], ctx.Err())
	}
}

// send writes one frame to the session.
func (as *agentSession) send(f session.Frame) error {
	b, err := json.Marshal(&f)
	if err != nil {
		return err
	}
	as.wmu.Lock()
	defer as.wmu.Unlock()
	if _, err := as.stdin.Write(append(b, '\n')); err != nil {
		return errors.Join(errSessionGone, err)
	}
	return nil
}

// readFrames hands each frame the session writes to its call, until the
// session ends; then every call still waiting fails.
func (as *agentSession) readFrames(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 128<<20)
	for sc.Scan() {
		var f session.Frame
		if json.Unmarshal(sc.Bytes(), &f) != nil {
			continue
		}
		as.mu.Lock()
		c := as.calls[f.ID]
		if c != nil && f.Done {
			delete(as.calls, f.ID)
		}
		as.mu.Unlock()
		if c == nil {
			continue
		}
		switch {
		case len(f.Out) > 0 && c.spec.Stdout != nil:
			_, _ = c.spec.Stdout.Write(f.Out)
		case len(f.Err) > 0 && c.spec.Stderr != nil:
			_, _ = c.spec.Stderr.Write(f.Err)
		}
		if f.Done {
			c.exit <- f.Exit
		}
	}
	err := sc.Err()
	if err == nil {
		err = errSessionGone
	}
	as.mu.Lock()
	as.err = fmt.Errorf("%w: %w (%s)", errSessionGone, err, engine.Truncate(as.stderr.String(), 200))
	as.mu.Unlock()
	close(as.done)
}

// close ends the session: its stdin closes and its process exits.
func (as *agentSession) close() {
	as.wmu.Lock()
	_ = as.stdin.Close()
	as.wmu.Unlock()
	as.cancel()
}

// syncWriter writes to w under mu.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
