package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rttlab/rttlab/agent"
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
		Example: `  rttlab doctor                     is this host ready?
  rttlab images build && rttlab run --plan smoke   the smoke study (minutes)
  rttlab run --plan smoke --apps go --delays 0,0.5,1
  rttlab report rttlab-results/20261203T075832Z-smoke`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return setupLogging(o.logLevel)
		},
	}
	cmd.PersistentFlags().StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{Err: flagError(err)} })
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
	usageArgs(cmd)
	return cmd
}

// usageArgs makes every wrong number of positional arguments a usage
// error (exit status 2) of one line that shows the command's usage, and an
// unknown sub-command of a command group one too.
func usageArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
	if c.HasSubCommands() {
		// A mistyped sub-command's flags are not the parent's: let the
		// parent take them so that the error names the sub-command.
		c.FParseErrWhitelist.UnknownFlags = true
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
			}
			return usagef("%s; see '%s --help'", msg, c.CommandPath())
		}
		if !c.Runnable() {
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		return
	}
	check := c.Args
	if check == nil {
		return
	}
	c.Args = func(c *cobra.Command, args []string) error {
		err := check(c, args)
		if err == nil {
			return nil
		}
		what := err.Error()
		if strings.HasPrefix(what, "unknown command") && len(args) > 0 {
			what = fmt.Sprintf("takes no arguments, got %q", args[0])
		}
		name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
		return usagef("%s: %s; usage: %s", name, what, strings.TrimSuffix(c.UseLine(), " [flags]"))
	}
}

func versionString() string {
	if commit != "" {
		return version + " (" + commit + ")"
	}
	return version
}

var invalidFlagRE = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// flagError words a flag's parse error for the user rather than in Go's
// terms: --runs "ten" is not a whole number, not strconv.ParseInt's
// message.
func flagError(err error) error {
	m := invalidFlagRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, flag, why := m[1], m[2], m[3]
	switch {
	case strings.Contains(why, "value out of range"):
		why = "is too large"
	case strings.Contains(why, "ParseInt") || strings.Contains(why, "ParseUint") || strings.Contains(why, "Atoi"):
		why = "is not a whole number"
	case strings.Contains(why, "ParseFloat"):
		why = "is not a number"
	case strings.Contains(why, "ParseBool"):
		why = "is not true or false"
	case strings.HasPrefix(why, "time: "):
		why = "is not a duration (e.g. 500us, 1ms, 2s)"
	default:
		why = "is not valid: " + why
	}
	return fmt.Errorf("%s %q %s", flag, value, why)
}
