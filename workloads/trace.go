package workloads

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/rttlab/rttlab/results/stats"
)

// TraceResult is one traced request: what the wire between the app and
// its database showed while the app served it.
type TraceResult struct {
	Type      string `json:"type"`
	Path      string `json:"path"`
	Status    int    `json:"status"`
	LatencyNS int64  `json:"latency_ns"`
	Error     string `json:"error,omitempty"`
	WireCounts
}

// Trace sends each request in turn to the app (from inside its network
// namespace) and attributes the database traffic seen meanwhile to it.
// Requests run one at a time, so every packet between two snapshots
// belongs to one request.
func Trace(ctx context.Context, w *WireCounter, baseURL string, reqs []Request, header map[string]string) ([]TraceResult, error) {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: DefaultRequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	out := make([]TraceResult, 0, len(reqs))
	for _, r := range reqs {
		if err := w.Mark(5 * time.Second); err != nil {
			return out, err
		}
		before := w.Snapshot()
		res := TraceResult{Type: r.Type, Path: r.Path}
		req, err := NewRequest(ctx, baseURL, r)
		if err != nil {
			return out, err
		}
		for k, v := range header {
			// The request's own header wins, whatever its case (as in the
			// load client).
			if req.Header.Get(k) == "" {
				req.Header.Set(k, v)
			}
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			res.Status = resp.StatusCode
		}
		res.LatencyNS = time.Since(start).Nanoseconds()
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			res.Error = err.Error()
		} else if res.Status/100 != 2 {
			res.Error = fmt.Sprintf("unexpected status %d", res.Status)
		}
		if err := w.Mark(5 * time.Second); err != nil {
			return out, err
		}
		res.WireCounts = w.Snapshot().Sub(before)
		if err := w.Err(); err != nil {
			return out, fmt.Errorf("capture stopped: %w", err)
		}
		out = append(out, res)
	}
	return out, nil
}

// TraceRow is the trace of one request type of one app: per request, the
// database round trips seen on the wire, the statements (Query and Execute
// messages) and Parse messages, and pg_stat_statements executions.
type TraceRow struct {
	App        string     `json:"app"`
	Type       string     `json:"type"`
	Weight     float64    `json:"weight"` // share in the app's mix; 0 for routes
	N          int        `json:"n"`
	Failures   int        `json:"failures"`
	RoundTrips TraceRange `json:"round_trips"`
	Statements TraceRange `json:"statements"`
	Parses     TraceRange `json:"parses"`
	// PGSS is -1 where the database cannot count statements (a user's
	// PostgreSQL without pg_stat_statements loaded).
	PGSS float64 `json:"pg_stat_statements_per_request"`
	// Expected statements per request from the app's metadata; -1 when
	// the app declares none (a mix).
	Expected float64 `json:"expected_statements"`
}

// TraceRange is a median and range over requests.
type TraceRange struct {
	Median float64 `json:"median"`
	Min    int     `json:"min"`
	Max    int     `json:"max"`
}

// RangeOf summarises per-request counts.
func RangeOf(v []int) TraceRange {
	if len(v) == 0 {
		return TraceRange{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	f := make([]float64, len(s))
	for i, x := range s {
		f[i] = float64(x)
	}
	return TraceRange{Median: stats.Percentile(f, 0.5), Min: s[0], Max: s[len(s)-1]}
}
