package main

import (
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

Start with:
  rttlab doctor          check the engine, privileges, netem/NFQUEUE and disk
  rttlab images build    build the base image and every app image
  rttlab verify go       prove the Go app does the database work it claims
  rttlab up go           start PostgreSQL + the Go app for manual poking`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return setupLogging(o.logLevel)
		},
	}
	cmd.PersistentFlags().StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	cmd.AddCommand(
		newDoctorCmd(),
		newImagesCmd(),
		newUpCmd(),
		newDownCmd(),
		newVerifyCmd(),
		newCleanCmd(),
		newAppsCmd(),
		newAgentCmd(),
		newRunCmd(),
		newShapeCmd(),
		newReportCmd(),
		newCompareCmd(),
		newTraceCmd(),
	)
	usageArgs(cmd)
	return cmd
}

// usageArgs makes a wrong number of arguments bad input (exit status 2),
// like a bad flag, for cmd and its subcommands.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

func versionString() string {
	if commit != "" {
		return version + " (" + commit + ")"
	}
	return version
}
