package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

func newDoctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "doctor",
		Short:   "Check this host: engine, privileges, netem, NFQUEUE, debootstrap, base image, disk",
		Example: `  rttlab doctor            what this host can do, a line per check with the fix`,
		Long: `Prints one line per check with OK, WARN or FAIL and the fix. Kernel netem and
NFQUEUE are tried for real in a throwaway network namespace, and the
kernel's own words are shown when they fail. Exits non-zero when
something required is missing (the engine, root or CAP_NET_ADMIN, one
working shaper, enough disk).

With --runtime kube it checks the cluster instead: the apiserver answers,
a node is Ready, the kubeconfig's user may create namespaces, pods and
pods/exec (asked of the apiserver), a privileged pod with the host's PIDs
(the node agent) is admitted (a dry run in --namespace, default
"default"), and the agent image is on every node.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if labRuntime.name == runtimeKube {
				if !kubeDoctor(ctx, cmd.OutOrStdout()) {
					return errors.New("doctor: a required check of the cluster failed (see FAIL above)")
				}
				return nil
			}
			rt, err := connect(ctx)
			var d engine.Docker
			if err == nil {
				defer rt.Close()
				d = rt
			}
			checks := engine.Doctor(ctx, doctorEnv(d, err))
			adviseEngine(checks, err)
			for _, c := range checks {
				fmt.Fprintln(cmd.OutOrStdout(), c)
			}
			if engine.DoctorFailed(checks) {
				return errors.New("doctor: a required check failed (see FAIL above)")
			}
			return nil
		},
	}
}

// doctorEnv is the host doctor checks (a test's stand-in in unit tests).
var doctorEnv = engine.HostDoctorEnv
