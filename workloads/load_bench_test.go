package workloads

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// benchBody is the response of the benchmark handler.
var benchBody = strings.Repeat("x", 64)

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, benchBody)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkRunLoad measures one closed-loop request of the load client
// against a handler that writes 64 bytes. Reported besides ns/op:
// lat-ns/req, the mean latency the client recorded, and gap-ns/req, the
// time per request spent outside the timed window (request set-up, result
// bookkeeping, emit). Compare ns/op with BenchmarkRawKeepAlive to get the
// cost of the client itself beyond the handler, loopback and server.
func BenchmarkRunLoad(b *testing.B) {
	srv := benchServer(b)
	var sumLat int64
	emit := func(r Result) error {
		if r.Failed() {
			b.Fatalf("request failed: %+v", r)
		}
		if !r.Warmup {
			sumLat += r.LatencyNS
		}
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	tot, err := RunLoad(context.Background(), LoadOptions{BaseURL: srv.URL, Route: "/feed", Warmup: 10, Measured: b.N}, emit)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if tot.NewConns != 1 {
		b.Fatalf("%d connections, want 1", tot.NewConns)
	}
	b.ReportMetric(float64(sumLat)/float64(b.N), "lat-ns/req")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds()-sumLat)/float64(b.N), "gap-ns/req")
}

// BenchmarkRawKeepAlive is the floor for BenchmarkRunLoad: the same
// request written as fixed bytes on one TCP connection and the response
// parsed with http.ReadResponse, with no transport, pool or tracing.
func BenchmarkRawKeepAlive(b *testing.B) {
	srv := benchServer(b)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	reqBytes := []byte("GET /feed HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() + "\r\nUser-Agent: raw\r\n\r\n")
	br := bufio.NewReader(conn)
	one := func() time.Duration {
		start := time.Now()
		if _, err := conn.Write(reqBytes); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	for range 10 {
		one()
	}
	var sumLat int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sumLat += int64(one())
	}
	b.StopTimer()
	b.ReportMetric(float64(sumLat)/float64(b.N), "lat-ns/req")
}

// BenchmarkNetHTTPClient is a stock http.Client with a default transport
// doing the same requests: the difference to BenchmarkRunLoad is what the
// load client adds on top of net/http itself.
func BenchmarkNetHTTPClient(b *testing.B) {
	srv := benchServer(b)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	get := func() {
		resp, err := c.Get(srv.URL + "/feed")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	for range 10 {
		get()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		get()
	}
}
