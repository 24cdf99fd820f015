package proxyserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/internal/proxyserve/proxytest"
)

// lineProxy answers every request and writes one line to its log when
// closed.
type lineProxy struct {
	logw   io.Writer
	closed bool
}

func (p *lineProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }

func (p *lineProxy) Close() error {
	p.closed = true
	_, err := io.WriteString(p.logw, "closed\n")
	return err
}

func TestServerValidatesBeforeListening(t *testing.T) {
	bad := errors.New("bad config")
	s := Server{Name: "test proxy", Listen: "256.0.0.1:1", Validate: func() error { return bad }}
	if err := s.ListenAndServe(context.Background()); err != bad {
		t.Errorf("invalid config: %v, want the validation error itself", err)
	}
	s.Validate = nil
	if err := s.ListenAndServe(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "test proxy listen: ") {
		t.Errorf("bad address: %v", err)
	}
}

func TestServerStopsCleanly(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "out", "decisions.jsonl")
	var p *lineProxy
	s := Server{Name: "test proxy", LogPath: logPath, Build: func(logw io.Writer) (Handler, []any, error) {
		p = &lineProxy{logw: logw}
		return p, nil, nil
	}}
	addr, stop := proxytest.Serve(t, s.Serve)
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(logPath); err != nil || string(b) != "closed\n" || !p.closed {
		t.Errorf("log %q, %v; proxy closed %v", b, err, p.closed)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener is still open")
	}
}

func TestServerBuildError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bad := errors.New("no proxy")
	s := Server{Name: "test proxy", LogPath: filepath.Join(t.TempDir(), "d.jsonl"),
		Build: func(io.Writer) (Handler, []any, error) { return nil, nil, bad }}
	if err := s.Serve(context.Background(), ln); err != bad {
		t.Errorf("build error: %v", err)
	}
}

func TestCoreClose(t *testing.T) {
	var buf strings.Builder
	c := NewCore[int](nil, &buf)
	c.Log(1)
	c.Log(2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Log(3) // after Close: dropped
	if buf.String() != "1\n2\n" {
		t.Errorf("log %q", buf.String())
	}
	if err := NewCore[int](nil, nil).Close(); err != nil {
		t.Errorf("discarded log: %v", err)
	}
}
