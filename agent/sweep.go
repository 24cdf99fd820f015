package agent

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/netem"
)

type agentSweepOptions struct {
	prefix string
	list   bool
}

// newAgentSweepCmd removes wire shaping rules from the host's tables: what
// a run's cleanup and `rttlab clean` run in an agent container that can
// enter the host's network namespace.
func newAgentSweepCmd() *cobra.Command {
	o := &agentSweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Remove the wire shaper rules of a run (or of every run) from the host's tables",
		Long: `Removes every mangle rule whose comment is a wire shaper's ("rttlab:<label>")
with a label starting with --label-prefix, in this network namespace (run
it on the host's network). Prints the removed rules as JSON; with --list it removes
nothing and prints the rules it found.`,
		Example: `  rttlab agent sweep --label-prefix 4da0b515b9/`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rules, err := netem.SweepWire(o.prefix, o.list)
			if rules == nil {
				rules = []string{}
			}
			key := "removed"
			if o.list {
				key = "found"
			}
			_ = json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{key: rules})
			return err
		},
	}
	cmd.Flags().StringVar(&o.prefix, "label-prefix", "", "remove rules whose label starts with this (empty: every rttlab wire rule)")
	cmd.Flags().BoolVar(&o.list, "list", false, "list the rules, remove nothing")
	return cmd
}

// newAgentNetemProbeCmd tries kernel netem in the agent's own network
// namespace: how the orchestrator learns which backend "auto" gets.
func newAgentNetemProbeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "netem-probe",
		Short: "Say whether kernel netem works here (adds and removes a netem qdisc on lo)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep := map[string]any{"kernel": true, "why": "sch_netem works"}
			if err := netem.ProbeKernel(); err != nil {
				rep = map[string]any{"kernel": false, "why": err.Error()}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
		},
	}
}
