package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
)

// newTestServer returns a server without a database: the handlers tested
// here must answer before touching it (a nil *sql.DB would panic).
func newTestServer() *server {
	return &server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func do(t *testing.T, s *server, method, target string) (*http.Response, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	res := rec.Result()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, target, ct)
	}
	var body map[string]any
	if method != http.MethodHead {
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v", method, target, err)
		}
	}
	return res, body
}

func TestHealth(t *testing.T) {
	res, body := do(t, newTestServer(), http.MethodGet, "/health")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	if body["status"] != "ok" || len(body) != 1 {
		t.Fatalf(`body %v, want {"status":"ok"}`, body)
	}
}

func TestHeadHealth(t *testing.T) {
	res, _ := do(t, newTestServer(), http.MethodHead, "/health")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
}

func TestSerialBadN(t *testing.T) {
	for _, q := range []string{
		"", "?n=", "?n=abc", "?n=-1", "?n=1001", "?n=1.5", "?n=+3", "?n=%205",
		"?n=99999999999999999999", "?n=1&n=2", "?m=3",
	} {
		res, body := do(t, newTestServer(), http.MethodGet, "/serial"+q)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("/serial%s: status %d, want 400", q, res.StatusCode)
			continue
		}
		msg, ok := body["error"].(string)
		if !ok || msg == "" {
			t.Errorf("/serial%s: body %v has no error message", q, body)
		}
	}
}

func TestSerialZeroNeedsNoDatabase(t *testing.T) {
	res, body := do(t, newTestServer(), http.MethodGet, "/serial?n=0")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	if n, ok := body["n"].(float64); !ok || n != 0 || len(body) != 1 {
		t.Fatalf(`body %v, want {"n":0}`, body)
	}
}

func TestParseN(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want int
		ok   bool
	}{
		{[]string{"0"}, 0, true},
		{[]string{"5"}, 5, true},
		{[]string{"007"}, 7, true},
		{[]string{"1000"}, 1000, true},
		{[]string{"1001"}, 0, false},
		{[]string{"-0"}, 0, false},
		{[]string{" 5"}, 0, false},
		{[]string{"0x10"}, 0, false},
		{nil, 0, false},
		{[]string{"1", "1"}, 0, false},
	} {
		got, err := parseN(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseN(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestNotFound(t *testing.T) {
	for _, p := range []string{"/", "/feeds", "/health/", "/serial/5"} {
		res, body := do(t, newTestServer(), http.MethodGet, p)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, res.StatusCode)
		}
		if _, ok := body["error"].(string); !ok {
			t.Errorf("%s: body %v has no error", p, body)
		}
	}
}

func TestMethodNotAllowed(t *testing.T) {
	res, body := do(t, newTestServer(), http.MethodPost, "/feed")
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("status %d, want 405", res.StatusCode)
	}
	if res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("Allow %q", res.Header.Get("Allow"))
	}
	if _, ok := body["error"].(string); !ok {
		t.Errorf("body %v has no error", body)
	}
}

func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", ":8080", true},
		{"3000", ":3000", true},
		{"0", "", false},
		{"65536", "", false},
		{"http", "", false},
	} {
		got, err := listenAddr(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("listenAddr(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestWaitForDBGivesUp points the pool at a port nobody listens on and
// checks that the start-up wait ends with an error after its limit.
func TestWaitForDBGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	t.Setenv("PGHOST", "127.0.0.1")
	t.Setenv("PGPORT", strconv.Itoa(port))
	t.Setenv("PGUSER", "rttlab")
	t.Setenv("PGPASSWORD", "unused")
	t.Setenv("PGDATABASE", "rttlab")
	t.Setenv("PGCONNECT_TIMEOUT", "1")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := openDB(log)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("MaxOpenConnections %d, want 1", got)
	}
	start := time.Now()
	err = waitForDB(context.Background(), db, 700*time.Millisecond, log)
	if err == nil {
		t.Fatal("waitForDB succeeded against a closed port")
	}
	if !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("error %q does not say the database is not reachable", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("waitForDB took %s with a 700ms limit", el)
	}
}

// TestAppYAML checks that app.yaml passes rttlab's metadata validation and
// lists exactly the routes this program serves.
func TestAppYAML(t *testing.T) {
	data, err := os.ReadFile("app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := apps.ParseMeta("go", data)
	if err != nil {
		t.Fatal(err)
	}
	served := newTestServer().handlers()
	if _, ok := served[m.Health]; !ok {
		t.Errorf("health path %s is not served", m.Health)
	}
	want := map[string]int{"/feed": 3, "/feed-naive": 12}
	for _, r := range m.Routes {
		if _, ok := served[r.Path]; !ok {
			t.Errorf("app.yaml lists %s, which is not served", r.Path)
		}
		if r.Path == "/serial" {
			if !r.StatementsPerN {
				t.Errorf("/serial must set statements_per_n")
			}
			continue
		}
		if r.Statements != want[r.Path] {
			t.Errorf("%s: statements %d, want %d", r.Path, r.Statements, want[r.Path])
		}
	}
	if len(m.Routes)+1 != len(served) {
		t.Errorf("app.yaml lists %d routes plus health, the program serves %d paths", len(m.Routes), len(served))
	}
	if len(m.GoBuild) != 1 || m.GoBuild[0].Package != "./apps/go" || m.GoBuild[0].Output != "feed" {
		t.Errorf("gobuild %+v, want ./apps/go -> feed", m.GoBuild)
	}
}
