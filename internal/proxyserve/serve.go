// Package proxyserve runs the studies' proxies (the placement study's
// routing proxy, the worker-scheduling study's front proxy): a decision log
// file, an HTTP server on a listener, and a clean stop when the context
// ends.
package proxyserve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
