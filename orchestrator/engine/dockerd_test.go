package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// dockerd is an HTTP stand-in for the Docker engine that Runtime talks to
// through the real Engine API client. It answers /_ping with the API
// version it is given (1.41 by default: Debian's engine 20.10), records
// every request and hands the others to the handlers a test registers
// with handle. A request no handler takes fails the test and gets a 501,
// not the mux's 404, so that a missing route never passes for an engine's
// "no such object".
type dockerd struct {
	t   *testing.T
	api string
	// refuse, when set, is the message of a 403 answer to every ping.
	refuse string
	mux    *http.ServeMux
	srv    *httptest.Server

	mu   sync.Mutex
	reqs []apiRequest
}

// apiRequest is one request the stand-in received.
type apiRequest struct {
	Method string
	Path   string // without the /v<api> prefix
	Query  url.Values
	Header http.Header
	Body   []byte
}

func newDockerd(t *testing.T) *dockerd { return newDockerdAPI(t, "1.41") }

func newDockerdAPI(t *testing.T, api string) *dockerd {
	t.Helper()
	d := &dockerd{t: t, api: api, mux: http.NewServeMux()}
	ping := func(w http.ResponseWriter, r *http.Request) {
		if d.refuse != "" {
			engineError(w, http.StatusForbidden, d.refuse)
			return
		}
		w.Header().Set("Api-Version", d.api)
		w.Header().Set("Ostype", "linux")
		io.WriteString(w, "OK")
	}
	d.mux.HandleFunc("HEAD /_ping", ping)
	d.mux.HandleFunc("GET /_ping", ping)
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *dockerd) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	d.mu.Lock()
	d.reqs = append(d.reqs, apiRequest{
		Method: r.Method,
		Path:   strings.TrimPrefix(r.URL.Path, "/v"+d.api),
		Query:  r.URL.Query(),
		Header: r.Header.Clone(),
		Body:   body,
	})
	d.mu.Unlock()
	if _, pattern := d.mux.Handler(r); pattern == "" {
		d.t.Errorf("fake dockerd: no handler for %s %s", r.Method, r.URL)
		engineError(w, http.StatusNotImplemented, "fake dockerd: no handler for "+r.Method+" "+r.URL.Path)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// handle registers h for "METHOD /path" under the negotiated API version's
// prefix: a client that did not negotiate down to it finds no handler.
func (d *dockerd) handle(pattern string, h http.HandlerFunc) {
	method, p, _ := strings.Cut(pattern, " ")
	d.mux.HandleFunc(method+" /v"+d.api+p, h)
}

// host is the DOCKER_HOST that reaches the stand-in.
func (d *dockerd) host() string { return "tcp://" + d.srv.Listener.Addr().String() }

// runtime connects a Runtime to the stand-in the way rttlab does, through
// NewRuntime and DOCKER_HOST.
func (d *dockerd) runtime() *Runtime {
	d.t.Helper()
	setDockerEnv(d.t, d.host())
	r, err := NewRuntime(context.Background())
	if err != nil {
		d.t.Fatalf("NewRuntime: %v", err)
	}
	d.t.Cleanup(func() { r.Close() })
	return r
}

// setDockerEnv points the client's environment at host and clears what
// else of it would change the connection.
func setDockerEnv(t *testing.T, host string) {
	t.Setenv("DOCKER_HOST", host)
	t.Setenv("DOCKER_API_VERSION", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
}

// requests returns the recorded requests for method and path (path
// without the version prefix).
func (d *dockerd) requests(method, path string) []apiRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []apiRequest
	for _, r := range d.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// only returns the one request for method and path, failing the test
// when there was not exactly one.
func (d *dockerd) only(method, path string) apiRequest {
	d.t.Helper()
	rs := d.requests(method, path)
	if len(rs) != 1 {
		d.t.Fatalf("%d requests %s %s, want 1 (all: %v)", len(rs), method, path, d.paths())
	}
	return rs[0]
}

// paths lists "METHOD path" of every request, for failure messages.
func (d *dockerd) paths() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, r := range d.reqs {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// decode unmarshals a recorded JSON body.
func (r apiRequest) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s %s body %q: %v", r.Method, r.Path, r.Body, err)
	}
}

// labelFilter returns the label filters of a list request's filters
// parameter, as the engine reads them.
func (r apiRequest) labelFilter(t *testing.T) map[string]bool {
	t.Helper()
	var f map[string]map[string]bool
	if err := json.Unmarshal([]byte(r.Query.Get("filters")), &f); err != nil {
		t.Fatalf("%s %s filters %q: %v", r.Method, r.Path, r.Query.Get("filters"), err)
	}
	return f["label"]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// engineError answers the way the engine reports a failure.
func engineError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

// replyError is a handler that always fails with status and msg.
func replyError(status int, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { engineError(w, status, msg) }
}

// replyJSON is a handler that always answers v.
func replyJSON(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, v) }
}

// replyNoContent answers 204, as start, stop, kill and removals do.
func replyNoContent(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }
