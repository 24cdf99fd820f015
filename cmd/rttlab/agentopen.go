package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/workloads"
)

type agentOpenOptions struct {
	url       string
	paths     []string
	rate      float64
	count     int
	warmup    int
	seed      uint64
	copy      []string
	timeout   time.Duration
	newConn   bool
	maxP99    time.Duration
	startRate float64
	maxRate   float64
	maxTrials int
}

func (o *agentOpenOptions) check(capacity bool) error {
	if o.url == "" {
		return usagef("--url is required")
	}
	if len(o.paths) == 0 {
		return usagef("give at least one --path")
	}
	if o.count < 1 || o.warmup < 0 || o.warmup >= o.count {
		return usagef("--count must be positive and --warmup below it")
	}
	if capacity {
		if o.maxP99 <= 0 {
			return usagef("--max-p99 must be positive (the latency a sustained rate keeps its p99 under)")
		}
		return nil
	}
	if !(o.rate > 0) {
		return usagef("--rate must be positive")
	}
	return nil
}

func (o *agentOpenOptions) loopOptions(rate float64) workloads.OpenLoopOptions {
	return workloads.OpenLoopOptions{
		BaseURL: o.url, Requests: workloads.PathRequests(o.paths...), Rate: rate, Count: o.count, Warmup: o.warmup,
		Seed: o.seed, Timeout: o.timeout, CopyHeaders: o.copy, NewConnPerRequest: o.newConn, Drain: 5 * time.Second,
	}
}

func (o *agentOpenOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "base URL, e.g. http://a:8080")
	f.StringArrayVar(&o.paths, "path", nil, "request path, repeatable; arrival i sends path i mod the list's length")
	f.IntVar(&o.count, "count", 500, "arrivals, warmup included")
	f.IntVar(&o.warmup, "warmup", 0, "leading warmup arrivals")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the arrival schedule")
	f.StringArrayVar(&o.copy, "copy-header", nil, "response header copied into each result's tags (repeatable)")
	f.DurationVar(&o.timeout, "timeout", workloads.DefaultRequestTimeout, "per-request timeout")
	f.BoolVar(&o.newConn, "new-conn", false, "a new connection per request (no keep-alive)")
}

func newAgentOpenLoopCmd() *cobra.Command {
	o := &agentOpenOptions{}
	cmd := &cobra.Command{
		Use:   "openloop --url URL --rate R --path P...",
		Short: "Open-loop load: Poisson arrivals at --rate, latency from each scheduled send; one JSON line per request",
		Long: `Sends --count requests at Poisson arrival times (rate --rate per second,
schedule seeded by --seed), each on its own goroutine, never waiting for
earlier answers, so queueing shows in the latency (measured from the
scheduled send time, not the actual one). The last line on stderr is a
JSON object with the totals: achieved rate, schedule lag, failures,
requests in flight.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.check(false) },
		RunE: func(cmd *cobra.Command, args []string) error {
			w := workloads.NewOpenResultWriter(cmd.OutOrStdout())
			tot, err := workloads.RunOpenLoop(cmd.Context(), o.loopOptions(o.rate), w.Write)
			b, _ := json.Marshal(tot)
			fmt.Fprintln(cmd.ErrOrStderr(), string(b))
			return err
		},
	}
	o.flags(cmd)
	cmd.Flags().Float64Var(&o.rate, "rate", 0, "arrivals per second")
	return cmd
}

func newAgentCapacityCmd() *cobra.Command {
	o := &agentOpenOptions{}
	cmd := &cobra.Command{
		Use:   "capacity --url URL --path P... --max-p99 D",
		Short: "The highest open-loop rate the target sustains; prints JSON with every trial",
		Long: `Runs open-loop trials of --count arrivals, doubling the rate from
--start-rate until one is not sustained (throughput below 95% of the offered
rate, more than 1% failures, or latency p99 above --max-p99), then bisects.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.check(true) },
		RunE: func(cmd *cobra.Command, args []string) error {
			capy, err := workloads.SearchCapacity(cmd.Context(), workloads.CapacityOptions{
				CapacityCriteria: workloads.CapacityCriteria{MaxLatencyP99: o.maxP99},
				StartRate:        o.startRate, MaxRate: o.maxRate, MaxTrials: o.maxTrials,
			}, func(ctx context.Context, rate float64) (workloads.OpenTotals, error) {
				return workloads.RunOpenLoop(ctx, o.loopOptions(rate), func(workloads.OpenResult) error { return nil })
			})
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(capy)
		},
	}
	o.flags(cmd)
	cmd.Flags().DurationVar(&o.maxP99, "max-p99", 0, "latency p99 a sustained rate stays under")
	cmd.Flags().Float64Var(&o.startRate, "start-rate", 20, "first trial's rate")
	cmd.Flags().Float64Var(&o.maxRate, "max-rate", 5000, "highest rate tried")
	cmd.Flags().IntVar(&o.maxTrials, "max-trials", 10, "most trials")
	return cmd
}
