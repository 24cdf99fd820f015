package proxytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// HoldHeader on a request makes an Upstream hold it until the test
// releases it.
const HoldHeader = "X-Hold"

// Upstream is what a proxy's tests put behind the proxy: a server that
// answers each request with its name and the request's URI (its name in
// X-Upstream too), counts requests and new connections, and holds a
// request carrying HoldHeader until the test releases it.
type Upstream struct {
	Name  string
	Srv   *httptest.Server
	Hits  atomic.Int64
	Conns atomic.Int64
	// Held receives the URI of each request as it is held.
	Held chan string
	// Release lets one held request go on for each value sent.
	Release chan struct{}
}

// NewUpstream starts an Upstream named name; t's cleanup releases what it
// still holds and closes it. A request that carries the header refuse
// (unless refuse is empty), which the proxy must not forward, is answered
// 418 and not held.
func NewUpstream(t testing.TB, name, refuse string) *Upstream {
	u := &Upstream{Name: name, Release: make(chan struct{}, 64), Held: make(chan string, 64)}
	u.Srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.Hits.Add(1)
		if refuse != "" && r.Header.Get(refuse) != "" {
			http.Error(w, refuse+" header forwarded", http.StatusTeapot)
			return
		}
		if r.Header.Get(HoldHeader) != "" {
			u.Held <- r.URL.RequestURI()
			<-u.Release
		}
		w.Header().Set("X-Upstream", name)
		io.WriteString(w, name+" "+r.URL.RequestURI())
	}))
	u.Srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.Conns.Add(1)
		}
	}
	u.Srv.Start()
	t.Cleanup(func() {
		close(u.Release)
		u.Srv.Close()
	})
	return u
}

// Serve runs serve on a new loopback listener until the returned stop is
// called, and returns the listener's address. stop cancels serve's context
// and returns what serve returned; it fails t when serve has not returned
// within 15 seconds.
func Serve(t testing.TB, serve func(context.Context, net.Listener) error) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	return ln.Addr().String(), func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("Serve did not stop")
			return nil
		}
	}
}
