package proxyserve

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// forwardProxy forwards every request to up and keeps the outcomes.
type forwardProxy struct {
	up       *Upstream
	mu       sync.Mutex
	outcomes []Outcome
}

func (p *forwardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p.up.Forward(w, r, func(o Outcome) {
		o = o.Since(start)
		p.mu.Lock()
		p.outcomes = append(p.outcomes, o)
		p.mu.Unlock()
	})
}

func (p *forwardProxy) last(t *testing.T) Outcome {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.outcomes) == 0 {
		t.Fatal("no outcome recorded")
	}
	return p.outcomes[len(p.outcomes)-1]
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestUpstreamForwards(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(20 * time.Millisecond)
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		case "/cut":
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "short")
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		io.WriteString(w, r.URL.RequestURI()+" via "+r.Header.Get("X-Forwarded-Host"))
	}))
	defer origin.Close()
	target, err := ParseUpstreamURL(origin.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	p := &forwardProxy{up: NewUpstream("a", target, UpstreamOptions{Who: "test proxy"})}
	front := httptest.NewServer(p)
	defer front.Close()
	defer p.up.CloseIdle()
	c := front.Client()

	code, body := get(t, c, front.URL+"/slow?n=3")
	if code != 200 || !strings.HasPrefix(body, "/slow?n=3 via 127.0.0.1") {
		t.Errorf("slow: %d %q", code, body)
	}
	if o := p.last(t); o.Status != 200 || o.UpstreamStatus != 200 || o.UpstreamMs < 20 || o.TotalMs < o.UpstreamMs || o.Error != "" || o.ConnReused {
		t.Errorf("slow outcome %+v", o)
	}
	get(t, c, front.URL+"/again")
	if o := p.last(t); !o.ConnReused {
		t.Errorf("second request did not reuse the pooled connection: %+v", o)
	}
	if code, _ := get(t, c, front.URL+"/teapot"); code != http.StatusTeapot {
		t.Errorf("teapot: %d", code)
	}
	if o := p.last(t); o.Status != http.StatusTeapot || o.Error != "" {
		t.Errorf("teapot outcome %+v", o)
	}
	get(t, c, front.URL+"/cut")
	if o := p.last(t); o.Error != "response aborted while copying the upstream body" {
		t.Errorf("cut outcome %+v", o)
	}

	origin.Close()
	code, body = get(t, c, front.URL+"/gone")
	if code != http.StatusBadGateway || !strings.HasPrefix(body, "test proxy: upstream a: ") {
		t.Errorf("gone: %d %q", code, body)
	}
	if o := p.last(t); o.Status != http.StatusBadGateway || o.UpstreamStatus != 0 || o.Error == "" {
		t.Errorf("gone outcome %+v", o)
	}
}

func TestUpstreamWithoutKeepAlives(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	target, _ := url.Parse(origin.URL)
	p := &forwardProxy{up: NewUpstream("a", target, UpstreamOptions{DisableKeepAlives: true})}
	front := httptest.NewServer(p)
	defer front.Close()
	for range 2 {
		get(t, front.Client(), front.URL+"/")
		if o := p.last(t); o.ConnReused || o.Status != 200 {
			t.Errorf("outcome %+v", o)
		}
	}
}

func TestReadLog(t *testing.T) {
	type rec struct {
		Seq int `json:"seq"`
	}
	got, err := ReadLog[rec](strings.NewReader("{\"seq\":1}\n\n{\"seq\":2}\n"))
	if err != nil || len(got) != 2 || got[1].Seq != 2 {
		t.Errorf("got %v, %v", got, err)
	}
	got, err = ReadLog[rec](strings.NewReader("{\"seq\":1}\nnot json\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "decision log line 2: ") || len(got) != 1 {
		t.Errorf("bad line: %v, %v", got, err)
	}
	if Ms(1500*time.Microsecond) != 1.5 {
		t.Error("Ms")
	}
}

func TestTakeQuery(t *testing.T) {
	for raw, want := range map[string][2]string{
		"/feed?policy=profiled&n=3": {"profiled", "n=3"},
		"/feed?n=3":                 {"", "n=3"},
		"/feed?policy=a&policy=b":   {"a", ""},
		"/feed":                     {"", ""},
	} {
		u, _ := url.Parse(raw)
		if got := TakeQuery(u, "policy"); got != want[0] || u.RawQuery != want[1] {
			t.Errorf("%s: %q, query %q; want %q, %q", raw, got, u.RawQuery, want[0], want[1])
		}
	}
}

func TestBeginAndRefuse(t *testing.T) {
	c := NewCore[Head](nil, nil)
	defer c.Close()
	r := httptest.NewRequest(http.MethodPost, "/x", nil)
	r.Header.Set(HeaderRequestID, "r-7")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	if h := c.Begin(r, start); h.Seq != 1 || h.RequestID != "r-7" || h.Method != "POST" || !h.Time.Equal(start) || h.Time.Location() != time.UTC {
		t.Errorf("first head %+v", h)
	}
	if h := c.Begin(r, start); h.Seq != 2 {
		t.Errorf("second head %+v", h)
	}
	w := httptest.NewRecorder()
	o := Refuse(w, "test proxy", time.Now(), http.StatusBadRequest, errors.New("bad policy"))
	if o.Status != 400 || o.Error != "bad policy" || o.UpstreamStatus != 0 || w.Code != 400 || w.Body.String() != "test proxy: bad policy\n" {
		t.Errorf("refuse %+v, %d %q", o, w.Code, w.Body.String())
	}
}
