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
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"time"
)

// The studies' proxies share these defaults for their upstreams.
const (
	// DefaultUpstreamTimeout bounds dialing an upstream and waiting for
	// its response headers.
	DefaultUpstreamTimeout = 30 * time.Second
	// MaxIdlePerUpstream keeps enough idle connections per upstream that
	// open-loop bursts reuse them rather than dial.
	MaxIdlePerUpstream = 256
)

// UpstreamOptions configure one upstream's connection pool.
type UpstreamOptions struct {
	// Timeout bounds a dial and the wait for response headers
	// (DefaultUpstreamTimeout when 0).
	Timeout time.Duration
	// DisableKeepAlives opens a new connection per request.
	DisableKeepAlives bool
	// DisableCompression passes bodies as the upstream sent them.
	DisableCompression bool
	// Who names the proxy in the body of a 502 ("rttlab proxy").
	Who string
}

// Upstream is one upstream of a proxy: a reverse proxy over a connection
// pool of its own, which times each round trip and notes whether the
// connection was reused. A failed upstream request is answered 502 with
// the reason and never retried elsewhere.
type Upstream struct {
	Name string
	rp   *httputil.ReverseProxy
	tr   *http.Transport
}

// NewUpstream builds the upstream named name at target.
func NewUpstream(name string, target *url.URL, o UpstreamOptions) *Upstream {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultUpstreamTimeout
	}
	tr := &http.Transport{
		Proxy:                 nil, // never an environment proxy between the proxy and its upstreams
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		DisableKeepAlives:     o.DisableKeepAlives,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   MaxIdlePerUpstream,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		TLSHandshakeTimeout:   timeout,
		DisableCompression:    o.DisableCompression,
	}
	u := &Upstream{Name: name, tr: tr}
	u.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport: timedTransport{tr},
		ModifyResponse: func(resp *http.Response) error {
			if st, _ := resp.Request.Context().Value(stateKey{}).(*reqState); st != nil {
				st.status = resp.StatusCode
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if st, _ := r.Context().Value(stateKey{}).(*reqState); st != nil {
				st.err = err
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "%s: upstream %s: %v\n", o.Who, name, err)
		},
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	return u
}

// HeaderRequestID carries the load client's id of a request, which the
// proxies copy into their decision records.
const HeaderRequestID = "X-Rttlab-Request"

// Head is how every proxy's decision record begins (a record embeds it):
// the request's arrival, its number, the client's request id and the
// method.
type Head struct {
	// Time is when the request reached the proxy (UTC).
	Time time.Time `json:"time"`
	// Seq numbers the proxy's requests from 1.
	Seq       uint64 `json:"seq"`
	RequestID string `json:"request_id,omitempty"`
	Method    string `json:"method"`
}

// Outcome is what became of one request through a proxy; every decision
// record embeds it.
type Outcome struct {
	// Status is what the proxy answered: the upstream's status, 502 when
	// the upstream failed, or the proxy's own refusal; UpstreamStatus what
	// the upstream answered (0 when it did not).
	Status         int `json:"status"`
	UpstreamStatus int `json:"upstream_status"`
	// UpstreamMs is the upstream round trip, from sending the request
	// (connect included when a connection is opened) to its response
	// headers; TotalMs is the proxy's whole handling, from arrival to the
	// last body byte written to the client.
	UpstreamMs float64 `json:"upstream_ms"`
	TotalMs    float64 `json:"total_ms"`
	// ConnReused is set when the upstream request went over a kept-alive
	// connection.
	ConnReused bool `json:"conn_reused"`
	// Error says why the request failed, was refused or broke off.
	Error string `json:"error,omitempty"`
}

// Refuse answers a request the proxy does not forward with status and
// err (the body begins with who, "rttlab proxy") and returns its outcome,
// timed from the request's arrival at start.
func Refuse(w http.ResponseWriter, who string, start time.Time, status int, err error) Outcome {
	o := Outcome{Status: status, Error: err.Error(), TotalMs: Ms(time.Since(start))}
	http.Error(w, who+": "+err.Error(), status)
	return o
}

// Since is o with TotalMs, the proxy's whole handling, timed from the
// request's arrival at start to now.
func (o Outcome) Since(start time.Time) Outcome {
	o.TotalMs = Ms(time.Since(start))
	return o
}

// Forward sends r to the upstream and calls done with the outcome (all but
// TotalMs, which done sets with Since) once the response is written. When
// the body breaks off after the headers went out, the reverse proxy panics
// with http.ErrAbortHandler: done is called (with the abort as its error)
// before the panic goes on to abort the response.
func (u *Upstream) Forward(w http.ResponseWriter, r *http.Request, done func(Outcome)) {
	st := &reqState{}
	outcome := func() Outcome {
		return Outcome{UpstreamMs: Ms(st.upstream), UpstreamStatus: st.status, ConnReused: st.reused, Status: st.status}
	}
	completed := false
	defer func() {
		if !completed {
			o := outcome()
			o.Error = "response aborted while copying the upstream body"
			done(o)
		}
	}()
	u.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	completed = true
	o := outcome()
	if st.err != nil {
		o.Status, o.Error = http.StatusBadGateway, st.err.Error()
	}
	done(o)
}

// CloseIdle closes the upstream's idle connections.
func (u *Upstream) CloseIdle() { u.tr.CloseIdleConnections() }

type stateKey struct{}

// reqState carries what the transport and the reverse proxy's hooks learn
// about one upstream request back to Forward. Only the request's own
// goroutine touches it.
type reqState struct {
	upstream time.Duration
	reused   bool
	status   int
	err      error
}

// timedTransport times the upstream round trip and records whether the
// connection was reused.
type timedTransport struct{ rt http.RoundTripper }

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	st, _ := req.Context().Value(stateKey{}).(*reqState)
	if st == nil {
		return t.rt.RoundTrip(req)
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { st.reused = i.Reused },
	}))
	t0 := time.Now()
	resp, err := t.rt.RoundTrip(req)
	st.upstream = time.Since(t0)
	return resp, err
}

// ParseUpstreamURL checks an upstream's URL: http(s)://host[:port], no
// query or fragment; with originOnly, no path either.
func ParseUpstreamURL(s string, originOnly bool) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want http://host[:port]", s)
	}
	if originOnly {
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("url %q: an origin only, no path, query or fragment", s)
		}
		u.Path = ""
	} else if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("url %q: no query or fragment allowed", s)
	}
	return u, nil
}

// CheckUpstream checks the i-th upstream of a proxy's config: named, not
// listed before (seen records the names so far) and at an http(s) URL (an
// origin only when originOnly).
func CheckUpstream(seen map[string]bool, i int, name, rawURL string, originOnly bool) error {
	if name == "" {
		return fmt.Errorf("upstreams[%d] has no name", i)
	}
	if seen[name] {
		return fmt.Errorf("upstreams[%d]: %q listed twice", i, name)
	}
	seen[name] = true
	if _, err := ParseUpstreamURL(rawURL, originOnly); err != nil {
		return fmt.Errorf("upstream %s: %w", name, err)
	}
	return nil
}

// TakeQuery removes the query parameter key from u and returns its value
// ("" when u has none).
func TakeQuery(u *url.URL, key string) string {
	q := u.Query()
	if !q.Has(key) {
		return ""
	}
	v := q.Get(key)
	q.Del(key)
	u.RawQuery = q.Encode()
	return v
}

// ReadLog parses a decision log (JSON lines of T; blank lines skipped); a
// bad line is an error naming its line number, with the records before it.
func ReadLog[T any](r io.Reader) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec T
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("decision log line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("decision log line %d: %w", line+1, err)
	}
	return out, nil
}

// Ms is a duration in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / 1e6 }
