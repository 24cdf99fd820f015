package shaping

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/workloads"
)

// Check is one verification result.
type Check struct {
	App      string
	Route    string
	What     string
	Expected string
	Observed string
	OK       bool
	Detail   string
}

func (c Check) String() string {
	status := "OK  "
	if !c.OK {
		status = "FAIL"
	}
	s := fmt.Sprintf("%s %s %s: %s (expected %s, observed %s)", status, c.App, c.Route, c.What, c.Expected, c.Observed)
	if c.Detail != "" {
		s += "\n       " + strings.ReplaceAll(c.Detail, "\n", "\n       ")
	}
	return s
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Requests per route for the statement count (after warmup).
	Requests int
	// SerialN is the n used for /serial?n=N.
	SerialN int
	// Progress receives each check as it completes.
	Progress func(Check)
	// Shaping, when set, adds the wire checks: per route, the database
	// round trips and Parse messages per request seen by the app's agent,
	// against the metadata's per-statement figures (apps.Meta.Wire).
	Shaping *Shaping
}

// VerifyStack checks every route of the route contract on a running stack
// (status, content type, JSON shape, the 400 on a bad n) and that the
// database work is real: the statements per request counted with
// pg_stat_statements equal the metadata's figure.
func VerifyStack(ctx context.Context, d runtime.Execer, st *stack.Stack, o VerifyOptions) ([]Check, error) {
	if o.Requests <= 0 {
		o.Requests = 10
	}
	if o.SerialN <= 0 {
		o.SerialN = 5
	}
	base := st.BaseURL()
	hc := &http.Client{Timeout: 30 * time.Second}
	var checks []Check
	add := func(c Check) {
		c.App = st.Target.Name
		checks = append(checks, c)
		if o.Progress != nil {
			o.Progress(c)
		}
	}
	meta := st.Target.Meta
	if meta.Mix != "" {
		err := mixAppChecks(ctx, d, hc, st, base, add)
		return checks, err
	}
	if meta.Image != "" {
		// A user's own app: its health path answers 200 and its routes
		// (or its request mix's types, statements counted there) 2xx,
		// whatever their bodies.
		add(check2xx(ctx, hc, base, meta.Health, true))
		for _, r := range meta.Routes {
			add(check2xx(ctx, hc, base, r.Path, false))
		}
		if len(meta.RequestMix) > 0 {
			if err := verifyRequestMix(ctx, d, hc, st, o, add); err != nil {
				return checks, err
			}
		}
	} else {
		contractChecks(ctx, hc, base, meta, o.SerialN, add)
	}
	if err := ctx.Err(); err != nil {
		return checks, err
	}
	err := workChecks(ctx, d, hc, st, base, o, add)
	return checks, err
}

// mixAppChecks checks an application driven by a request mix: its routes
// answer 200 JSON with its auth header, and not without it; its statement
// counts are not declared but traced.
func mixAppChecks(ctx context.Context, d runtime.Execer, hc *http.Client, st *stack.Stack, base string, add func(Check)) error {
	hdr, err := AuthHeaders(ctx, d, st)
	if err != nil {
		return err
	}
	for _, r := range st.Target.Meta.Routes {
		add(checkJSONWith(ctx, hc, base, r.Path, http.StatusOK, nil, hdr))
		if len(hdr) > 0 {
			add(checkStatus(ctx, hc, base, r.Path, http.StatusUnauthorized, []string{strings.SplitN(hdr[0], ":", 2)[0] + ": wrong-key"}))
		}
	}
	return nil
}

// contractChecks checks the route contract of one of rttlab's apps: the
// health path and every route answer 200 JSON of the route's shape, and a
// per-N route answers 400 to a bad n.
func contractChecks(ctx context.Context, hc *http.Client, base string, meta *apps.Meta, serialN int, add func(Check)) {
	add(checkJSON(ctx, hc, base, meta.Health, http.StatusOK, nil))
	for _, r := range meta.Routes {
		path := r.Path
		if r.StatementsPerN {
			path = fmt.Sprintf("%s?n=%d", r.Path, serialN)
		}
		add(checkJSON(ctx, hc, base, path, http.StatusOK, shapeFor(r.Path, serialN)))
		if r.StatementsPerN {
			for _, bad := range []string{"?n=-1", "?n=1001", "?n=abc", ""} {
				add(checkJSON(ctx, hc, base, r.Path+bad, http.StatusBadRequest, hasError))
			}
		}
	}
}

// workChecks checks the database work of every route: the statements per
// request, then (with a shaping) the round trips and Parse messages on
// the wire.
func workChecks(ctx context.Context, d runtime.Execer, hc *http.Client, st *stack.Stack, base string, o VerifyOptions, add func(Check)) error {
	for _, r := range st.Target.Meta.Routes {
		c, err := countCheck(ctx, d, hc, st, base, r, o)
		if err != nil {
			return err
		}
		add(c)
	}
	if o.Shaping != nil {
		wc, err := wireChecks(ctx, d, o.Shaping, o)
		if err != nil {
			return err
		}
		for _, c := range wc {
			add(c)
		}
	}
	return nil
}

// wireChecks traces each route and compares round trips and Parse
// messages per request with what the metadata declares per statement.
func wireChecks(ctx context.Context, d runtime.Execer, sh *Shaping, o VerifyOptions) ([]Check, error) {
	st := sh.Stack
	mix, err := MixFor(st.Target.Meta) // an own app's request_mix, else nil
	if err != nil {
		return nil, err
	}
	reqs := TraceRequests(st.Target, mix, o.Requests, o.SerialN, 1)
	rows, err := TraceApp(ctx, d, sh, TraceOptions{Requests: reqs, Warmup: 3})
	if err != nil {
		return nil, err
	}
	want, declared := st.Target.Meta.Wire[st.Target.Variant]
	var out []Check
	for _, r := range rows {
		stmts := st.Target.Meta.StatementsPerRequest(r.Type)
		parses, parsesDeclared := 0.0, false
		if want.Parses != nil {
			parses, parsesDeclared = *want.Parses, true
		}
		for _, w := range []struct {
			what     string
			observed float64
			per      float64
			extra    float64
			declared bool
		}{{"round trips per request (wire)", r.RoundTrips.Median, want.RoundTrips, want.ExtraRoundTrips, declared},
			{"Parse messages per request (wire)", r.Parses.Median, parses, 0, declared && parsesDeclared}} {
			c := Check{Route: r.Type, What: w.what, Observed: strconv.FormatFloat(w.observed, 'f', -1, 64)}
			if !w.declared || stmts < 0 {
				c.Expected, c.OK = "(not declared)", true
				c.Detail = fmt.Sprintf("median over %d requests, range %s", r.N, wireRange(w.what, r))
			} else {
				exp := stmts * w.per
				c.Expected = strconv.FormatFloat(exp, 'f', -1, 64)
				c.OK = w.observed == exp
				if w.extra > 0 {
					c.Expected += "-" + strconv.FormatFloat(exp+w.extra, 'f', -1, 64)
					c.OK = w.observed >= exp && w.observed <= exp+w.extra
				}
				if !c.OK {
					c.Detail = fmt.Sprintf("median over %d requests (range %s); apps/%s/app.yaml declares %g per statement for variant %q",
						r.N, wireRange(w.what, r), st.Target.Meta.Name, w.per, st.Target.Variant)
				}
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func wireRange(what string, r workloads.TraceRow) string {
	x := r.RoundTrips
	if strings.HasPrefix(what, "Parse") {
		x = r.Parses
	}
	return fmt.Sprintf("%d-%d", x.Min, x.Max)
}

func countCheck(ctx context.Context, d runtime.Execer, hc *http.Client, st *stack.Stack, base string, r apps.Route, o VerifyOptions) (Check, error) {
	path := r.Path
	want := int64(r.Statements)
	if r.StatementsPerN {
		path = fmt.Sprintf("%s?n=%d", r.Path, o.SerialN)
		want = int64(o.SerialN)
	}
	c := Check{Route: path, What: "statements per request", Expected: fmt.Sprint(want)}
	if r.Undeclared {
		c.Expected = "(not declared)"
	}
	send := func(ctx context.Context) error { return getStatus(ctx, hc, base+path, r.Undeclared) }
	return countStatements(ctx, d, st, c, send, want, r.Undeclared, o.Requests)
}

// countStatements sends a request 3 times to warm up, then requests
// times, and compares the statements the app role ran with want per request
// (reported, not asserted, when undeclared).
func countStatements(ctx context.Context, d runtime.Execer, st *stack.Stack, c Check, send func(context.Context) error, want int64, undeclared bool, requests int) (Check, error) {
	// Warm up: first requests may load schema or prepare statements.
	for i := 0; i < 3; i++ {
		if err := send(ctx); err != nil {
			if ctx.Err() != nil {
				return c, ctx.Err()
			}
			c.Observed, c.Detail = "error", err.Error()
			return c, nil
		}
	}
	if err := st.ResetStatements(ctx, d); err != nil {
		return c, err
	}
	for i := 0; i < requests; i++ {
		if err := send(ctx); err != nil {
			if ctx.Err() != nil {
				return c, ctx.Err()
			}
			c.Observed, c.Detail = "error", err.Error()
			return c, nil
		}
	}
	n, err := st.CountStatements(ctx, d)
	if err != nil {
		return c, err
	}
	if n < 0 {
		// Undeclared work is reported, not asserted; declared work that
		// cannot be counted fails with the reason.
		c.Observed, c.Detail, c.OK = "unavailable", st.NoStatements, undeclared
		return c, nil
	}
	per := float64(n) / float64(requests)
	c.Observed = strconv.FormatFloat(per, 'f', -1, 64)
	c.OK = n == want*int64(requests)
	if undeclared {
		// Reported, not asserted: nobody declared the route's work.
		c.OK = true
		c.Detail = fmt.Sprintf("%d statements over %d requests", n, requests)
		return c, nil
	}
	if !c.OK {
		rows, _ := st.StatementsByQuery(ctx, d)
		c.Detail = fmt.Sprintf("%d statements over %d requests; by statement:\n%s\nfix: make apps/%s do exactly the route contract's work (apps/README.md) or correct its app.yaml",
			n, requests, strings.Join(rows, "\n"), st.Target.Meta.Name)
	}
	return c, nil
}

// getStatus GETs url and wants 200, or any 2xx when any2xx.
func getStatus(ctx context.Context, hc *http.Client, url string, any2xx bool) error {
	code, err := statusOf(ctx, hc, url, nil)
	if err != nil {
		return err
	}
	if any2xx && code/100 == 2 {
		return nil
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, code)
	}
	return nil
}

type shapeCheck func(v any) error

func hasError(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("body is not a JSON object")
	}
	if s, _ := m["error"].(string); s == "" {
		return fmt.Errorf(`body has no "error" string`)
	}
	return nil
}

func shapeFor(route string, n int) shapeCheck {
	switch route {
	case "/feed", "/feed-naive":
		return feedShape
	case "/work":
		return func(v any) error {
			m, err := countedObject(v, n)
			if err != nil {
				return err
			}
			if pid, _ := m["pid"].(float64); pid <= 0 {
				return fmt.Errorf(`"pid" is %v, want the serving process`, m["pid"])
			}
			return nil
		}
	case "/serial":
		return func(v any) error {
			_, err := countedObject(v, n)
			return err
		}
	}
	return nil
}

// countedObject is the body of a route that does n calls: a JSON object
// whose "n" says n.
func countedObject(v any, n int) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("body is not a JSON object")
	}
	if got, _ := m["n"].(float64); int(got) != n {
		return nil, fmt.Errorf(`"n" is %v, want %d`, m["n"], n)
	}
	return m, nil
}

func feedShape(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("body is not a JSON object")
	}
	acc, ok := m["account"].(map[string]any)
	if !ok {
		return fmt.Errorf(`"account" object missing`)
	}
	if name, _ := acc["name"].(string); name != "reader" {
		return fmt.Errorf(`account name is %v, want "reader"`, acc["name"])
	}
	arts, ok := m["articles"].([]any)
	if !ok {
		return fmt.Errorf(`"articles" array missing`)
	}
	if len(arts) != apps.FeedArticles {
		return fmt.Errorf("%d articles, want %d", len(arts), apps.FeedArticles)
	}
	for i, a := range arts {
		am, ok := a.(map[string]any)
		if !ok {
			return fmt.Errorf("article %d is not an object", i)
		}
		if _, ok := am["id"].(float64); !ok {
			return fmt.Errorf("article %d: id missing", i)
		}
		if _, ok := am["title"].(string); !ok {
			return fmt.Errorf("article %d: title missing", i)
		}
		if f, ok := am["feedback"].(float64); !ok || f < 1 {
			return fmt.Errorf("article %d: feedback count missing or zero", i)
		}
	}
	return nil
}

// getWith sends a GET with extra headers given as "Name: value".
func getWith(ctx context.Context, hc *http.Client, url string, headers []string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return hc.Do(req)
}

// check2xx checks that a user's app answers path with 2xx (200 for its
// health path).
func check2xx(ctx context.Context, hc *http.Client, base, path string, health bool) Check {
	c, ok := Check{Route: path, What: "status", Expected: "2xx"}, is2xx
	if health {
		c.What, c.Expected, ok = "health status", "200", func(code int) bool { return code == http.StatusOK }
	}
	code, err := statusOf(ctx, hc, base+path, nil)
	return withStatus(c, code, err, ok)
}

func is2xx(code int) bool { return code/100 == 2 }

// statusOf GETs url with extra headers ("Name: value") and returns the
// status, the body read and dropped.
func statusOf(ctx context.Context, hc *http.Client, url string, headers []string) (int, error) {
	resp, err := getWith(ctx, hc, url, headers)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// withStatus fills c with a request's outcome: its status, passing when
// ok says so, or its error.
func withStatus(c Check, code int, err error, ok func(int) bool) Check {
	if err != nil {
		c.Observed, c.Detail = "error", err.Error()
		return c
	}
	c.Observed, c.OK = fmt.Sprint(code), ok(code)
	return c
}

// checkStatus checks only the status, e.g. the refusal of a wrong key.
func checkStatus(ctx context.Context, hc *http.Client, base, path string, want int, headers []string) Check {
	c := Check{Route: path, What: "status with a wrong API key", Expected: fmt.Sprint(want)}
	code, err := statusOf(ctx, hc, base+path, headers)
	return withStatus(c, code, err, func(code int) bool { return code == want })
}

func checkJSON(ctx context.Context, hc *http.Client, base, path string, wantStatus int, shape shapeCheck) Check {
	return checkJSONWith(ctx, hc, base, path, wantStatus, shape, nil)
}

func checkJSONWith(ctx context.Context, hc *http.Client, base, path string, wantStatus int, shape shapeCheck, headers []string) Check {
	c := Check{Route: path, What: "status, JSON", Expected: fmt.Sprintf("%d application/json", wantStatus)}
	resp, err := getWith(ctx, hc, base+path, headers)
	if err != nil {
		c.Observed, c.Detail = "error", err.Error()
		return c
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		c.Observed, c.Detail = "error", err.Error()
		return c
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	c.Observed = fmt.Sprintf("%d %s", resp.StatusCode, ct)
	if resp.StatusCode != wantStatus || ct != "application/json" {
		c.Detail = "body: " + engine.Truncate(string(body), 200)
		return c
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		c.Detail = "body is not JSON: " + engine.Truncate(string(body), 200)
		return c
	}
	if shape != nil {
		if err := shape(v); err != nil {
			c.Detail = "JSON shape: " + err.Error()
			return c
		}
	}
	c.OK = true
	return c
}

// Failed returns the failed checks.
func Failed(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// verifyRequestMix checks each request type of an own app's request_mix:
// it answers 2xx to its method, headers and body; its statements per
// request are reported, not asserted (VerifyStack adds the wire counts).
func verifyRequestMix(ctx context.Context, d runtime.Execer, hc *http.Client, st *stack.Stack, o VerifyOptions, add func(Check)) error {
	mix, err := MixFor(st.Target.Meta)
	if err != nil {
		return err
	}
	reqs := TraceRequests(st.Target, mix, 1, o.SerialN, 1)
	base := st.BaseURL()
	for _, it := range mix.Items {
		add(checkRequest2xx(ctx, hc, base, reqs[it.Name][0]))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, it := range mix.Items {
		q := reqs[it.Name][0]
		c := Check{Route: q.Type, What: "statements per request", Expected: "(not declared)"}
		send := func(ctx context.Context) error { return sendStatus(ctx, hc, base, q) }
		c, err := countStatements(ctx, d, st, c, send, 0, true, o.Requests)
		if err != nil {
			return err
		}
		add(c)
	}
	return nil
}

// sendStatus sends q and wants a 2xx.
func sendStatus(ctx context.Context, hc *http.Client, base string, q workloads.Request) error {
	code, err := sendRequest(ctx, hc, base, q)
	if err != nil {
		return err
	}
	if !is2xx(code) {
		return fmt.Errorf("%s: status %d", describeRequest(q), code)
	}
	return nil
}

// sendRequest sends q (its method, headers and body) and returns the
// status, the body read and dropped.
func sendRequest(ctx context.Context, hc *http.Client, base string, q workloads.Request) (int, error) {
	req, err := workloads.NewRequest(ctx, base, q)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// checkRequest2xx checks that one request type of a request_mix answers
// 2xx.
func checkRequest2xx(ctx context.Context, hc *http.Client, base string, q workloads.Request) Check {
	c := Check{Route: q.Type, What: "status of " + describeRequest(q), Expected: "2xx"}
	code, err := sendRequest(ctx, hc, base, q)
	return withStatus(c, code, err, is2xx)
}

// describeRequest is "METHOD path" of a request.
func describeRequest(q workloads.Request) string {
	m := q.Method
	if m == "" {
		m = http.MethodGet
	}
	return m + " " + q.Path
}
