package shaping

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// TraceRequests returns the request types of an app with n requests each:
// its routes (a per-N route with ?n=serialN), or its mix's types.
func TraceRequests(t apps.Target, mix *workloads.Mix, n, serialN int, seed uint64) map[string][]workloads.Request {
	out := map[string][]workloads.Request{}
	if mix != nil {
		rng := stats.StreamRNG(seed, "trace")
		for _, it := range mix.Items {
			for i := 0; i < n; i++ {
				out[it.Name] = append(out[it.Name], it.Request(rng))
			}
		}
		return out
	}
	for _, r := range t.Meta.Routes {
		p := r.Path
		if r.StatementsPerN {
			p += fmt.Sprintf("?n=%d", serialN)
		}
		for i := 0; i < n; i++ {
			out[p] = append(out[p], workloads.Request{Type: p, Path: p})
		}
	}
	return out
}

// TraceOptions configure TraceApp.
type TraceOptions struct {
	Requests map[string][]workloads.Request
	Warmup   int
	Header   []string
	// Weights are the mix shares of the request types (none for routes).
	Weights map[string]float64
}

// TraceApp sends each type's requests from inside the app's agent and
// counts, per request, the database round trips on the wire, the
// statements and Parse messages in the protocol stream, and (per type)
// the pg_stat_statements executions.
func TraceApp(ctx context.Context, d runtime.Execer, sh *Shaping, o TraceOptions) ([]workloads.TraceRow, error) {
	st := sh.Stack
	types := make([]string, 0, len(o.Requests))
	for k := range o.Requests {
		types = append(types, k)
	}
	slices.Sort(types)
	var out []workloads.TraceRow
	for _, typ := range types {
		res, pgss, err := traceType(ctx, d, sh, o, o.Requests[typ])
		if err != nil {
			return out, err
		}
		out = append(out, traceRow(st, typ, res, pgss, o.Weights[typ]))
	}
	return out, nil
}

// traceType sends one type's requests through the app's agent: the
// warmup alone, then, after the statement counters are reset, the
// measured requests. It returns their traces and the statements counted.
func traceType(ctx context.Context, d runtime.Execer, sh *Shaping, to TraceOptions, reqs []workloads.Request) ([]workloads.TraceResult, int64, error) {
	st := sh.Stack
	a := sh.Agents["app"]
	db := st.Role("db")
	c := agentclient.Client{D: d, ID: a.ID, Name: a.Name}
	o := agentclient.TraceOptions{DB: db.IP + ":5432", URL: fmt.Sprintf("http://127.0.0.1:%d", st.Target.Meta.Port), Header: to.Header}
	if to.Warmup > 0 {
		for i := 0; i < to.Warmup; i++ {
			w := reqs[i%len(reqs)]
			w.Type = "warmup"
			o.Requests = append(o.Requests, w)
		}
		if _, err := c.Trace(ctx, o); err != nil {
			return nil, 0, err
		}
	}
	if err := st.ResetStatements(ctx, d); err != nil {
		return nil, 0, err
	}
	o.Requests = reqs
	res, err := c.Trace(ctx, o)
	if err != nil {
		return nil, 0, err
	}
	pgss, err := st.CountStatements(ctx, d)
	if err != nil {
		return nil, 0, err
	}
	return res, pgss, nil
}

// traceRow sums up one type's traces: the range of round trips,
// statements and Parse messages per request, the failures, and the
// pg_stat_statements executions per request.
func traceRow(st *stack.Stack, typ string, res []workloads.TraceResult, pgss int64, weight float64) workloads.TraceRow {
	tt := workloads.TraceRow{App: st.Target.Name, Type: typ, N: len(res), Expected: st.Target.Meta.StatementsPerRequest(typ), Weight: weight}
	var trips, stmts, parses []int
	for _, r := range res {
		if r.Error != "" {
			tt.Failures++
		}
		trips = append(trips, r.RoundTrips)
		stmts = append(stmts, r.Statements)
		parses = append(parses, r.Parses)
	}
	tt.RoundTrips, tt.Statements, tt.Parses = workloads.RangeOf(trips), workloads.RangeOf(stmts), workloads.RangeOf(parses)
	switch {
	case pgss < 0:
		tt.PGSS = -1 // the database cannot count statements
	case len(res) > 0:
		tt.PGSS = float64(pgss) / float64(len(res))
	}
	return tt
}

// AuthHeaders reads the app's auth header value (apps.Meta.Auth) from its
// container; none when the app has no auth.
func AuthHeaders(ctx context.Context, d runtime.Execer, st *stack.Stack) ([]string, error) {
	au := st.Target.Meta.Auth
	if au == nil {
		return nil, nil
	}
	app := st.Role("app")
	var out, errb bytes.Buffer
	code, err := d.Exec(ctx, app.ID, runtime.ExecSpec{Cmd: []string{"cat", au.File}, Stdout: &out, Stderr: &errb})
	if err != nil {
		return nil, err
	}
	v := strings.TrimSpace(out.String())
	if code != 0 || v == "" {
		return nil, fmt.Errorf("%s: no %s in %s (the app did not finish its set-up): %s", st.Target.Name, au.Header, au.File, strings.TrimSpace(errb.String()))
	}
	return []string{au.Header + ": " + v}, nil
}

// MixFor returns the request mix of an app's metadata, or nil.
func MixFor(m *apps.Meta) (*workloads.Mix, error) {
	if len(m.RequestMix) > 0 {
		mx, err := workloads.RequestMix(m.Name, m.RequestMix)
		return &mx, err
	}
	switch m.Mix {
	case "":
		return nil, nil
	case "redmine":
		mx := workloads.RedmineMix()
		return &mx, nil
	case "aimeos":
		mx, err := workloads.AimeosMix(workloads.AimeosOptions{})
		return &mx, err
	}
	return nil, fmt.Errorf("apps/%s/app.yaml: mix %q is unknown (redmine or aimeos)", m.Name, m.Mix)
}

// MixWeights returns the shares of a mix's request types.
func MixWeights(m *workloads.Mix) map[string]float64 {
	if m == nil {
		return nil
	}
	var sum float64
	for _, it := range m.Items {
		sum += it.Weight
	}
	out := map[string]float64{}
	for _, it := range m.Items {
		out[it.Name] = it.Weight / sum
	}
	return out
}
