// Package proxyserve runs the studies' proxies (the placement study's
// routing proxy, the worker-scheduling study's front proxy): a decision log
// file, an HTTP server on a listener, and a clean stop when the context
// ends.
package proxyserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Handler is a proxy: it serves requests and, closed, flushes its log.
type Handler interface {
	http.Handler
	Close() error
}

// Serve opens the decision log at logPath (stdout when empty or "-",
// appended otherwise), builds the proxy with it, and serves on ln until ctx
// ends; then it shuts the server down, closes the proxy and the log. name
// prefixes its errors and its start line ("proxy", "workers proxy"); attrs
// go on the start line.
func Serve(ctx context.Context, ln net.Listener, logPath, name string, build func(io.Writer) (Handler, []any, error)) (err error) {
	defer ln.Close()
	var logw io.Writer = os.Stdout
	if logPath != "" && logPath != "-" {
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return fmt.Errorf("decision log: %w", err)
		}
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("decision log: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("decision log: %w", cerr)
			}
		}()
		logw = f
	}
	p, attrs, err := build(logw)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	slog.Info(name+" serving", append([]any{"addr", ln.Addr().String(), "log", logPath}, attrs...)...)
	select {
	case err = <-serveErr:
		err = fmt.Errorf("%s serve: %w", name, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := srv.Shutdown(sctx); serr != nil {
			err = fmt.Errorf("%s shutdown: %w", name, serr)
		}
	}
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// Log writes a proxy's decisions as JSON lines from one goroutine, flushing
// whenever no record is waiting, so the file is current between bursts. A
// full queue blocks the request rather than drop a line. Records written
// after Close are dropped.
type Log[T any] struct {
	mu     sync.RWMutex
	closed bool
	ch     chan T
	done   chan struct{}
	err    error // the first write error, read after done
}

// NewLog starts a Log on w.
func NewLog[T any](w io.Writer) *Log[T] {
	l := &Log[T]{ch: make(chan T, 4096), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		keep := func(err error) {
			if err != nil && l.err == nil {
				l.err = err
				slog.Error("decision log write failed; later lines are lost", "err", err)
			}
		}
		for rec := range l.ch {
			if l.err != nil {
				continue
			}
			keep(enc.Encode(rec))
			if len(l.ch) == 0 {
				keep(bw.Flush())
			}
		}
		keep(bw.Flush())
	}()
	return l
}

// Write queues one record.
func (l *Log[T]) Write(rec T) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.closed {
		l.ch <- rec
	}
}

// Close writes what is queued and returns the first write error.
func (l *Log[T]) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.ch)
	}
	l.mu.Unlock()
	<-l.done
	if l.err != nil {
		return fmt.Errorf("decision log: %w", l.err)
	}
	return nil
}
