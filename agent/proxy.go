package agent

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/placement"
)

// The placement study's commands inside the client node: the routing proxy
// and a TCP connect probe.

type agentProxyOptions struct {
	config string
	json   string
}

func newAgentProxyCmd() *cobra.Command {
	o := &agentProxyOptions{}
	cmd := &cobra.Command{
		Use:   "proxy (--config FILE | --config-json JSON)",
		Short: "The placement study's routing proxy: choose a compute host per request and log the decision",
		Long: `Serves HTTP on the configured address and forwards each request to one of
the configured upstreams (compute hosts), chosen per request by a policy:
user-first, network-only, profiled or queue-aware. The policy comes from
the X-Rttlab-Policy header, else the rttlab_policy query parameter, else
the configuration's default. Every decision (route, policy, estimates per
host, in-flight counts, chosen host, upstream status and latency) is
written as one JSON line to the configured log file. A failed upstream
fails the request (502, logged); the proxy never reroutes.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if (o.config == "") == (o.json == "") {
				return cli.Usagef("give --config FILE or --config-json JSON")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg placement.Config
			var err error
			if o.config != "" {
				cfg, err = placement.LoadConfig(o.config)
			} else {
				cfg, err = placement.ParseConfig([]byte(o.json))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "rttlab proxy: listening on %s, %d upstreams, default policy %s\n", cfg.Listen, len(cfg.Upstreams), cfg.DefaultPolicy)
			return placement.Server(cfg).ListenAndServe(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "proxy configuration file (JSON)")
	cmd.Flags().StringVar(&o.json, "config-json", "", "proxy configuration as a JSON string")
	return cmd
}

type agentConnectOptions struct {
	to      string
	count   int
	warmup  int
	timeout time.Duration
}

// ConnectResult is `agent connect`'s output: TCP connect times in ns.
type ConnectResult struct {
	To       string  `json:"to"`
	Warmup   int     `json:"warmup"`
	Failures int     `json:"failures"`
	Samples  []int64 `json:"samples_ns"`
}

func newAgentConnectCmd() *cobra.Command {
	o := &agentConnectOptions{}
	cmd := &cobra.Command{
		Use:   "connect --to HOST:PORT",
		Short: "TCP connect time probe: opens and closes COUNT connections; prints JSON",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if o.to == "" {
				return cli.Usagef("--to HOST:PORT is required")
			}
			if _, _, err := net.SplitHostPort(o.to); err != nil {
				return cli.Usagef("--to %q: %v", o.to, err)
			}
			if o.count < 1 || o.count > 100000 || o.warmup < 0 {
				return cli.Usagef("--count must be 1..100000 and --warmup not negative")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			res := ConnectResult{To: o.to, Warmup: o.warmup}
			d := net.Dialer{Timeout: o.timeout}
			for i := 0; i < o.warmup+o.count; i++ {
				if err := cmd.Context().Err(); err != nil {
					return err
				}
				start := time.Now()
				c, err := d.DialContext(cmd.Context(), "tcp", o.to)
				el := time.Since(start)
				if err != nil {
					if i >= o.warmup {
						res.Failures++
					}
					continue
				}
				c.Close()
				if i >= o.warmup {
					res.Samples = append(res.Samples, el.Nanoseconds())
				}
			}
			if len(res.Samples) == 0 {
				fmt.Fprintf(os.Stderr, "rttlab: no connection to %s succeeded\n", o.to)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "address to connect to")
	cmd.Flags().IntVar(&o.count, "count", 100, "measured connections")
	cmd.Flags().IntVar(&o.warmup, "warmup", 10, "warmup connections")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Second, "per-connection timeout")
	return cmd
}
