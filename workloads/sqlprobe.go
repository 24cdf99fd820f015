package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SelectOneWarmupCalls is the number of uncounted SELECT 1 calls made once,
// before the first run, to settle the connection and the server backend.
const SelectOneWarmupCalls = 10

// ProbeRun is one run of the SELECT 1 probe. N counts successful calls;
// the statistics cover those only, failures are counted apart.
type ProbeRun struct {
	Run       int             `json:"run"`
	N         int             `json:"n"`
	Median    time.Duration   `json:"median_ns"`
	Mean      time.Duration   `json:"mean_ns"`
	Min       time.Duration   `json:"min_ns"`
	Max       time.Duration   `json:"max_ns"`
	Failures  int             `json:"failures"`
	LastError string          `json:"last_error,omitempty"`
	Samples   []time.Duration `json:"samples_ns"`
}

// SelectOne measures database round trips: on one pgx connection it makes
// SelectOneWarmupCalls uncounted calls, then runs runs × calls calls of
// "SELECT 1" over the simple query protocol (one Query message, one round
// trip, no prepared or cached statement), each timed on the monotonic
// clock. An empty dsn takes the connection settings from the PG*
// environment variables. A failed call is counted in its run; if it left
// the connection closed, the probe reconnects before the next call.
func SelectOne(ctx context.Context, dsn string, runs, calls int) ([]ProbeRun, error) {
	if runs <= 0 || calls <= 0 {
		return nil, fmt.Errorf("select 1 probe: runs (%d) and calls (%d) must be positive", runs, calls)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("select 1 probe: parse connection settings: %w", err)
	}
	conn, err := probeConnect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()

	for i := range SelectOneWarmupCalls {
		if _, err := conn.Exec(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol); err != nil {
			return nil, fmt.Errorf("select 1 probe: warmup call %d: %w", i, err)
		}
	}

	out := make([]ProbeRun, 0, runs)
	for run := range runs {
		pr := ProbeRun{Run: run, Samples: make([]time.Duration, 0, calls)}
		for range calls {
			if err := ctx.Err(); err != nil {
				return out, fmt.Errorf("select 1 probe: run %d: %w", run, err)
			}
			start := time.Now()
			_, err := conn.Exec(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol)
			lat := time.Since(start)
			if err != nil {
				if ctx.Err() != nil {
					return out, fmt.Errorf("select 1 probe: run %d: %w", run, ctx.Err())
				}
				pr.Failures++
				pr.LastError = err.Error()
				if conn.IsClosed() {
					c, cerr := probeConnect(ctx, cfg)
					if cerr != nil {
						return append(out, pr.finish()), fmt.Errorf("select 1 probe: run %d: reconnect after %v: %w", run, err, cerr)
					}
					conn = c
				}
				continue
			}
			pr.Samples = append(pr.Samples, lat)
		}
		out = append(out, pr.finish())
	}
	return out, nil
}

// probeConnect opens the probe's connection with cfg.
func probeConnect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("select 1 probe: connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return c, nil
}

// finish fills in the statistics from the samples.
func (pr ProbeRun) finish() ProbeRun {
	pr.N = len(pr.Samples)
	if pr.N == 0 {
		return pr
	}
	pr.Median, pr.Mean, pr.Min, pr.Max = durationStats(pr.Samples)
	return pr
}
