package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// RunFunc runs one call: the agent command's arguments, its stdin (ends
// at the call's EOF frame) and its outputs; it returns the exit status.
type RunFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Serve reads calls from in until it ends, runs each at once with run,
// and writes their frames to out. A verb not in Verbs is refused with
// exit status 2. The calls still running when in ends are cancelled and
// waited for.
func Serve(ctx context.Context, in io.Reader, out io.Writer, run RunFunc) error {
	s := &server{out: out, calls: map[uint64]*call{}, run: run}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.wg.Wait()
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("session: bad frame %.80q: %w", sc.Text(), err)
		}
		s.handle(ctx, f)
	}
	return sc.Err()
}

type server struct {
	mu    sync.Mutex // guards out and calls
	out   io.Writer
	calls map[uint64]*call
	run   RunFunc
	wg    sync.WaitGroup
}

type call struct {
	stdin  *io.PipeWriter
	cancel context.CancelFunc
}

func (s *server) handle(ctx context.Context, f Frame) {
	s.mu.Lock()
	c := s.calls[f.ID]
	s.mu.Unlock()
	switch {
	case len(f.Args) > 0 && c == nil:
		s.start(ctx, f.ID, f.Args)
	case c != nil && f.EOF:
		c.stdin.Close()
	case c != nil && f.Cancel:
		c.cancel()
	}
}

// start runs one call in the background and sends its exit status when
// it ends.
func (s *server) start(ctx context.Context, id uint64, args []string) {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	s.mu.Lock()
	s.calls[id] = &call{stdin: pw, cancel: cancel}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		stdout, stderr := frameWriter{s, id, false}, frameWriter{s, id, true}
		code := 2
		if slices.Contains(Verbs, args[0]) {
			code = s.run(ctx, args, pr, stdout, stderr)
		} else {
			fmt.Fprintf(stderr, "rttlab: agent %s does not run in a session (it has its own exec): use %s\n", args[0], strings.Join(Verbs, ", "))
		}
		pr.Close()
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
		s.write(Frame{ID: id, Done: true, Exit: code})
	}()
}

// write sends one frame as a line; frames of calls running at once never
// interleave.
func (s *server) write(f Frame) {
	b, _ := json.Marshal(&f)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.out.Write(append(b, '\n'))
}

// frameWriter sends what a call writes as frames of its own.
type frameWriter struct {
	s   *server
	id  uint64
	err bool
}

func (w frameWriter) Write(p []byte) (int, error) {
	f := Frame{ID: w.id}
	if w.err {
		f.Err = append([]byte(nil), p...)
	} else {
		f.Out = append([]byte(nil), p...)
	}
	w.s.write(f)
	return len(p), nil
}
