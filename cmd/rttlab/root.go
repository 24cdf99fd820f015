package main

import (
	"github.com/rttlab/rttlab/agent"
	"github.com/rttlab/rttlab/internal/cli"
	"github.com/spf13/cobra"
)

type rootOptions struct {
	logLevel string
}

func newRootCmd() *cobra.Command {
	o := &rootOptions{}
	cmd := &cobra.Command{
		Use:   "rttlab",
		Short: "Measure what sub-millisecond app<->database RTT costs your requests",
		Long: `rttlab starts PostgreSQL, an application and a load client in Docker
containers on one host, injects a split delay between the application and
the database (half on each side), verifies the delay with ICMP and SELECT 1
probes, and reports request latency with bootstrap confidence intervals.

--runtime kube (or RTTLAB_RUNTIME=kube) points rttlab at a Kubernetes
cluster (--kubeconfig, else KUBECONFIG): run, doctor and clean run there
today; the other commands that start a stack say so and refuse.

Start with:
  rttlab doctor          check the engine, privileges, netem/NFQUEUE and disk
  rttlab images build    build the base image and every app image
  rttlab verify go       prove the Go app does the database work it claims
  rttlab up go           start PostgreSQL + the Go app for manual poking`,
		Example: `  rttlab doctor                     is this host ready?
  rttlab images build && rttlab run --plan smoke   the smoke study (minutes)
  rttlab run --plan smoke --apps go --delays 0,0.5,1
  rttlab report rttlab-results/20261203T075832Z-smoke`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := setupLogging(o.logLevel); err != nil {
				return err
			}
			return labRuntime.check(cmd)
		},
	}
	cmd.PersistentFlags().StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	labRuntime.bind(cmd)
	cmd.AddCommand(
		newDoctorCmd(),
		newImagesCmd(),
		newUpCmd(),
		newDownCmd(),
		newVerifyCmd(),
		newCleanCmd(),
		newAppsCmd(),
		agent.NewCmd(),
		newRunCmd(),
		newShapeCmd(),
		newReportCmd(),
		newCompareCmd(),
		newTraceCmd(),
		newCISmokeCmd(),
		newPlaceCmd(),
		newWorkersCmd(),
	)
	cli.Strict(cmd)
	return cmd
}

func versionString() string {
	if commit != "" {
		return version + " (" + commit + ")"
	}
	return version
}
