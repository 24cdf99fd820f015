package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/workers"
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
	headers   []string
	header    map[string]string
	maxP99    time.Duration
	startRate float64
	maxRate   float64
	maxTrials int
}

func (o *agentOpenOptions) check(capacity bool) error {
	if o.url == "" {
		return cli.Usagef("--url is required")
	}
	if len(o.paths) == 0 {
		return cli.Usagef("give at least one --path")
	}
	if o.count < 1 || o.warmup < 0 || o.warmup >= o.count {
		return cli.Usagef("--count must be positive and --warmup below it")
	}
	if capacity && o.maxP99 <= 0 {
		return cli.Usagef("--max-p99 must be positive (the latency a sustained rate keeps its p99 under)")
	}
	hdr, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	o.header = hdr
	if capacity {
		return nil
	}
	if !(o.rate > 0) {
		return cli.Usagef("--rate must be positive")
	}
	return nil
}

func (o *agentOpenOptions) loopOptions(rate float64) workloads.OpenLoopOptions {
	return workloads.OpenLoopOptions{
		BaseURL: o.url, Requests: workloads.PathRequests(o.paths...), Rate: rate, Count: o.count, Warmup: o.warmup,
		Seed: o.seed, Timeout: o.timeout, CopyHeaders: o.copy, NewConnPerRequest: o.newConn, Drain: 5 * time.Second, Header: o.header,
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
	f.StringArrayVar(&o.headers, "header", nil, "request header 'Name: value' for every request (repeatable)")
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

func newAgentWorkersProxyCmd() *cobra.Command {
	var js string
	cmd := &cobra.Command{
		Use:   "workers-proxy --config-json JSON",
		Short: "The worker-scheduling study's front proxy: W single-mode workers, jsq, round-robin or p2c",
		Long: `Forwards each request to one of the configured workers (single-mode Puma
processes) by the rule in the X-Rttlab-Policy header (or the configured
default): jsq sends it to a worker with nothing in progress if there is
one, else the least busy; round-robin takes turns; p2c takes the less
busy of two drawn at random. Every decision is a JSON line in the
configured log. A failed upstream fails the request (502); nothing is
rerouted.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if js == "" {
				return cli.Usagef("--config-json is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := workers.ParseProxyConfig([]byte(js))
			if err != nil {
				return err
			}
			return workers.Server(cfg).ListenAndServe(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&js, "config-json", "", "proxy configuration as a JSON string")
	return cmd
}
