// Package proxyserve runs the studies' proxies (the placement study's
// routing proxy, the worker-scheduling study's front proxy): a decision log
// file, an HTTP server on a listener, and a clean stop when the context
// ends.
package proxyserve

import (
	"bufio"
	"bytes"
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
	"sync/atomic"
	"time"
)

// Handler is a proxy: it serves requests and, closed, flushes its log.
type Handler interface {
	http.Handler
	Close() error
}

// DefaultListen is a proxy's address when its config names none.
const DefaultListen = ":8080"

// shutdownGrace is how long a stopping proxy waits for requests in flight.
const shutdownGrace = 10 * time.Second

// Server runs one study's proxy: it opens the decision log, builds the
// proxy on it, serves until the context ends, then stops cleanly.
type Server struct {
	// Name prefixes the errors and the start line ("proxy", "workers
	// proxy").
	Name string
	// Listen is ListenAndServe's address (DefaultListen when empty).
	Listen string
	// LogPath is the decision log: standard output when empty or "-",
	// appended to otherwise.
	LogPath string
	// Validate, when set, checks the config before ListenAndServe opens
	// its listener.
	Validate func() error
	// Build makes the proxy on the decision log; attrs go on the start
	// line.
	Build func(logw io.Writer) (p Handler, attrs []any, err error)
}

// ServerOf is the Server of the proxy that newProxy makes from cfg, named
// name, on cfg's listen address and decision log; attrs are its start
// line's attributes.
func ServerOf[C Config, P Handler](name string, cfg C, listen, logPath string,
	newProxy func(C, io.Writer) (P, error), attrs func(P) []any) Server {
	return Server{Name: name, Listen: listen, LogPath: logPath, Validate: cfg.Validate,
		Build: func(logw io.Writer) (Handler, []any, error) {
			p, err := newProxy(cfg, logw)
			if err != nil {
				return nil, nil, err
			}
			return p, attrs(p), nil
		}}
}

// ListenAndServe validates the config, listens on s.Listen (DefaultListen
// when empty) and serves there like Serve.
func (s Server) ListenAndServe(ctx context.Context) error {
	if s.Validate != nil {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	addr := s.Listen
	if addr == "" {
		addr = DefaultListen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s listen: %w", s.Name, err)
	}
	return s.Serve(ctx, ln)
}

// Serve opens the decision log, builds the proxy with it and serves on ln
// until ctx ends; then it shuts the server down (requests in flight get up
// to 10 s), closes the proxy, which flushes its log, and closes the log
// file. It closes ln and returns nil after a clean stop.
func (s Server) Serve(ctx context.Context, ln net.Listener) (err error) {
	defer ln.Close()
	logw, closeLog, err := openLog(s.LogPath)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeLog(); cerr != nil && err == nil {
			err = fmt.Errorf("decision log: %w", cerr)
		}
	}()
	p, attrs, err := s.Build(logw)
	if err != nil {
		return err
	}
	err = s.run(ctx, ln, p, attrs)
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// openLog opens the decision log at path (standard output, never closed,
// when empty or "-"), making its folder.
func openLog(path string) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return os.Stdout, func() error { return nil }, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("decision log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("decision log: %w", err)
	}
	return f, f.Close, nil
}

// run serves p on ln until the server fails or ctx ends, then shuts it
// down.
func (s Server) run(ctx context.Context, ln net.Listener, p Handler, attrs []any) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	slog.Info(s.Name+" serving", append([]any{"addr", ln.Addr().String(), "log", s.LogPath}, attrs...)...)
	select {
	case err := <-serveErr:
		return fmt.Errorf("%s serve: %w", s.Name, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return fmt.Errorf("%s shutdown: %w", s.Name, err)
		}
		return nil
	}
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

// Core is what a study's proxy holds besides its policy: its upstreams'
// connection pools, its decision log of T records, and the count that
// numbers its requests (Begin).
type Core[T any] struct {
	ups []*Upstream
	log *Log[T]
	seq atomic.Uint64
}

// NewCore starts the decision log on logw (discarded when nil) for the
// proxy of ups.
func NewCore[T any](ups []*Upstream, logw io.Writer) *Core[T] {
	if logw == nil {
		logw = io.Discard
	}
	return &Core[T]{ups: ups, log: NewLog[T](logw)}
}

// Begin numbers a request that reached the proxy at start: the head of
// its decision record.
func (c *Core[T]) Begin(r *http.Request, start time.Time) Head {
	return Head{Time: start.UTC(), Seq: c.seq.Add(1), RequestID: r.Header.Get(HeaderRequestID), Method: r.Method}
}

// Log queues one decision record.
func (c *Core[T]) Log(rec T) { c.log.Write(rec) }

// Close closes the upstreams' idle connections, then writes what is
// queued in the decision log and stops it, returning the log's first
// write error. Call it after the server has stopped handling requests;
// records logged later are dropped.
func (c *Core[T]) Close() error {
	for _, u := range c.ups {
		u.CloseIdle()
	}
	return c.log.Close()
}

// Config is a proxy's configuration: it checks itself.
type Config interface{ Validate() error }

// ParseConfig reads a proxy's config from one JSON object (unknown fields
// and data after it are errors) and validates it; what names the proxy in
// the errors ("proxy", "workers proxy").
func ParseConfig[C Config](b []byte, what string) (C, error) {
	var c C
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("parse %s config: %w", what, err)
	}
	if dec.More() {
		return c, fmt.Errorf("parse %s config: data after the JSON object", what)
	}
	return c, c.Validate()
}
