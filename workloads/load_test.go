package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer starts an httptest server that counts accepted TCP
// connections through its ConnState hook.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var accepted atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &accepted
}

// collect returns an emit function that appends to *out.
func collect(out *[]Result) func(Result) error {
	return func(r Result) error {
		*out = append(*out, r)
		return nil
	}
}

// hijackClose takes over the connection, optionally writes raw bytes, and
// closes it.
func hijackClose(t *testing.T, w http.ResponseWriter, raw string) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Errorf("response writer cannot hijack")
		return
	}
	conn, bufw, err := hj.Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if raw != "" {
		_, _ = bufw.WriteString(raw)
		_ = bufw.Flush()
	}
	_ = conn.Close()
}

func TestRunLoadReusesOneConnection(t *testing.T) {
	var sawHeader, sawUA, sawHost atomic.Value
	srv, accepted := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawHeader.Store(r.Header.Get("X-Rttlab-Test"))
		sawUA.Store(r.Header.Get("User-Agent"))
		sawHost.Store(r.Host)
		if r.Header.Get("Accept-Encoding") != "" {
			t.Errorf("client asked for compression: %q", r.Header.Get("Accept-Encoding"))
		}
		_, _ = io.WriteString(w, "hello")
	}))

	var got []Result
	tot, err := RunLoad(context.Background(), LoadOptions{
		BaseURL:  srv.URL + "/",
		Route:    "/feed",
		Warmup:   5,
		Measured: 50,
		Header:   map[string]string{"X-Rttlab-Test": "yes", "Host": "app.example"},
	}, collect(&got))
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
	want := Totals{Requests: 55, Warmup: 5, Measured: 50, NewConns: 1, Bytes: 55 * 5}
	tot.ElapsedNS = 0
	if tot != want {
		t.Errorf("totals = %+v, want %+v", tot, want)
	}
	if len(got) != 55 {
		t.Fatalf("emitted %d results, want 55", len(got))
	}
	for i, r := range got {
		if r.Seq != i || r.Warmup != (i < 5) || r.Path != "/feed" || r.Status != 200 ||
			r.Bytes != 5 || r.Error != "" || r.LatencyNS <= 0 || r.Retried || r.Failed() {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if v := sawHeader.Load(); v != "yes" {
		t.Errorf("custom header = %v, want yes", v)
	}
	if v := sawUA.Load(); v != userAgent {
		t.Errorf("User-Agent = %v, want %s", v, userAgent)
	}
	if v := sawHost.Load(); v != "app.example" {
		t.Errorf("Host = %v, want app.example", v)
	}
}

func TestRunLoadRequestList(t *testing.T) {
	var paths []string
	srv, accepted := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.RequestURI())
		_, _ = io.WriteString(w, r.URL.RequestURI())
	}))
	reqs := []string{"/a", "/b?x=1", "/a", "/issues/7.json?include=journals"}
	var got []Result
	tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Requests: reqs, Warmup: 1}, collect(&got))
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	if strings.Join(paths, " ") != strings.Join(reqs, " ") {
		t.Errorf("server saw %v, want %v", paths, reqs)
	}
	if tot.Warmup != 1 || tot.Measured != 3 || accepted.Load() != 1 {
		t.Errorf("totals %+v, accepted %d", tot, accepted.Load())
	}
	for i, r := range got {
		if r.Path != reqs[i] || r.Bytes != int64(len(reqs[i])) {
			t.Errorf("result %d = %+v", i, r)
		}
	}
}

func TestRunLoadCountsNon200AsFailures(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	srv, accepted := countingServer(t, mux)

	reqs := []string{"/ok", "/fail", "/ok", "/missing", "/moved", "/fail", "/ok"}
	var got []Result
	tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Requests: reqs, Warmup: 2}, collect(&got))
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	wantStatus := []int{200, 500, 200, 404, 302, 500, 200}
	if len(got) != len(reqs) {
		t.Fatalf("emitted %d results, want %d", len(got), len(reqs))
	}
	for i, r := range got {
		if r.Status != wantStatus[i] {
			t.Errorf("result %d status %d, want %d", i, r.Status, wantStatus[i])
		}
		if r.Failed() != (wantStatus[i] != 200) {
			t.Errorf("result %d failed=%v: %+v", i, r.Failed(), r)
		}
		if wantStatus[i] != 200 && r.Error != fmt.Sprintf("unexpected status %d", wantStatus[i]) {
			t.Errorf("result %d error %q", i, r.Error)
		}
	}
	if tot.Failures != 4 || tot.MeasuredFailures != 3 {
		t.Errorf("failures %d (measured %d), want 4 (3)", tot.Failures, tot.MeasuredFailures)
	}
	// Error bodies are read to the end, so the connection survives them.
	if accepted.Load() != 1 || tot.NewConns != 1 {
		t.Errorf("accepted %d, new conns %d, want 1 and 1", accepted.Load(), tot.NewConns)
	}
}

func TestRunLoadServerClosesConnection(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	// A response cut short: headers promise 100 bytes, 10 arrive.
	mux.HandleFunc("/truncate", func(w http.ResponseWriter, _ *http.Request) {
		hijackClose(t, w, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
	})
	// The connection closed with no response at all.
	mux.HandleFunc("/drop", func(w http.ResponseWriter, _ *http.Request) { hijackClose(t, w, "") })
	srv, accepted := countingServer(t, mux)

	reqs := []string{"/drop", "/ok", "/truncate", "/ok", "/drop", "/ok"}
	var got []Result
	tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Requests: reqs}, collect(&got))
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	if len(got) != len(reqs) {
		t.Fatalf("emitted %d results, want %d: failures must not be dropped", len(got), len(reqs))
	}
	for _, i := range []int{0, 2, 4} {
		if !got[i].Failed() || got[i].Error == "" {
			t.Errorf("result %d (%s) should be a failure with an error: %+v", i, reqs[i], got[i])
		}
	}
	if got[2].Status != 200 || got[2].Bytes != 10 {
		t.Errorf("truncated response should keep its status and the bytes read: %+v", got[2])
	}
	for _, i := range []int{1, 3, 5} {
		if got[i].Failed() {
			t.Errorf("result %d (%s) after a broken connection should succeed: %+v", i, reqs[i], got[i])
		}
	}
	// The first /drop comes on a fresh connection: net/http cannot retry it.
	// The second comes on a reused one: net/http re-sends it once on a new
	// connection, which is dropped as well; that must be visible.
	if got[0].Retried || !got[4].Retried || tot.Retries != 1 {
		t.Errorf("retried flags %v/%v, retries %d; want false/true, 1", got[0].Retried, got[4].Retried, tot.Retries)
	}
	if tot.Failures != 3 || tot.MeasuredFailures != 3 {
		t.Errorf("failures %d/%d, want 3/3", tot.Failures, tot.MeasuredFailures)
	}
	// Connections: /drop, /ok+/truncate, /ok+/drop, the retried /drop, /ok.
	if n := accepted.Load(); n != 5 || tot.NewConns != 5 {
		t.Errorf("accepted %d, client counted %d new connections; want 5 and 5", n, tot.NewConns)
	}
}

func TestRunLoadRequestTimeout(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv, _ := countingServer(t, mux)
	var got []Result
	tot, err := RunLoad(context.Background(), LoadOptions{
		BaseURL: srv.URL, Requests: []string{"/slow", "/ok"}, Timeout: 100 * time.Millisecond,
	}, collect(&got))
	if err != nil {
		t.Fatalf("RunLoad: %v", err)
	}
	if len(got) != 2 || !got[0].Failed() || !strings.Contains(got[0].Error, "deadline") || got[1].Failed() {
		t.Fatalf("results %+v", got)
	}
	if got[0].Latency() < 100*time.Millisecond {
		t.Errorf("timed-out request latency %s below the timeout", got[0].Latency())
	}
	if tot.Failures != 1 || tot.NewConns != 2 {
		t.Errorf("totals %+v", tot)
	}
}

func TestRunLoadStops(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))

	t.Run("emit error", func(t *testing.T) {
		boom := errors.New("pipe closed")
		n := 0
		tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Route: "/", Measured: 10}, func(Result) error {
			n++
			if n == 3 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || tot.Requests != 3 {
			t.Errorf("err %v, requests %d; want the emit error after 3", err, tot.Requests)
		}
	})

	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		tot, err := RunLoad(ctx, LoadOptions{BaseURL: srv.URL, Route: "/", Measured: 10}, func(Result) error {
			n++
			if n == 4 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || tot.Requests != 4 || n != 4 {
			t.Errorf("err %v, requests %d, emitted %d; want context.Canceled after 4", err, tot.Requests, n)
		}
	})
}

func TestRunLoadRejectsBadOptions(t *testing.T) {
	cases := map[string]LoadOptions{
		"no base URL":      {Route: "/", Measured: 1},
		"bad scheme":       {BaseURL: "ftp://h", Route: "/", Measured: 1},
		"no host":          {BaseURL: "http://", Route: "/", Measured: 1},
		"query in base":    {BaseURL: "http://h/?a=1", Route: "/", Measured: 1},
		"no route":         {BaseURL: "http://h", Measured: 1},
		"route without /":  {BaseURL: "http://h", Route: "feed", Measured: 1},
		"zero measured":    {BaseURL: "http://h", Route: "/", Warmup: 3},
		"negative warmup":  {BaseURL: "http://h", Route: "/", Warmup: -1, Measured: 1},
		"negative timeout": {BaseURL: "http://h", Route: "/", Measured: 1, Timeout: -time.Second},
		"all warmup":       {BaseURL: "http://h", Requests: []string{"/a", "/b"}, Warmup: 2},
		"count mismatch":   {BaseURL: "http://h", Requests: []string{"/a", "/b"}, Warmup: 1, Measured: 2},
		"list path":        {BaseURL: "http://h", Requests: []string{"/a", "b"}},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			n := 0
			if _, err := RunLoad(context.Background(), o, func(Result) error { n++; return nil }); err == nil || n != 0 {
				t.Errorf("err %v after %d results; want an error before any request", err, n)
			}
		})
	}
}

// NewConnPerRequest dials once per request, so every latency includes
// the connect; without it one kept-alive connection serves them all.
func TestRunLoadNewConnPerRequest(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	for _, newConn := range []bool{false, true} {
		srv, accepted := countingServer(t, mux)
		tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Route: "/ok", Warmup: 2, Measured: 5, NewConnPerRequest: newConn}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if newConn {
			want = 7
		}
		if accepted.Load() != want || int64(tot.NewConns) != want || tot.Failures != 0 {
			t.Errorf("new conn %v: accepted %d, new conns %d, failures %d; want %d", newConn, accepted.Load(), tot.NewConns, tot.Failures, want)
		}
	}
}

// With MarkSeq every request carries its sequence number, warmup
// included, beside the caller's headers; without it, none does.
func TestRunLoadMarksSequence(t *testing.T) {
	for _, mark := range []bool{true, false} {
		var seen []string
		srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, r.Header.Get(SeqHeader)+"/"+r.Header.Get("X-Rttlab-Test"))
		}))
		calls := []Request{{Path: "/a"}, {Path: "/b", Method: http.MethodPost, Body: "x", Headers: map[string]string{"X-Rttlab-Test": "b"}}, {Path: "/a"}}
		_, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Calls: calls, Warmup: 1, MarkSeq: mark,
			Header: map[string]string{"X-Rttlab-Test": "yes"}}, nil)
		if err != nil {
			t.Fatalf("RunLoad: %v", err)
		}
		want := []string{"0/yes", "1/b", "2/yes"}
		if !mark {
			want = []string{"/yes", "/b", "/yes"}
		}
		if strings.Join(seen, " ") != strings.Join(want, " ") {
			t.Errorf("mark %v: requests carried %q, want %q", mark, seen, want)
		}
	}
}
