package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// The runtimes a command can run on: Docker (one host, the default) and
// Kubernetes (a cluster, from a kubeconfig).
const (
	runtimeDocker = "docker"
	runtimeKube   = "kube"
)

// runtimeOptions are the root's flags that choose the runtime.
type runtimeOptions struct {
	name       string // --runtime, default RTTLAB_RUNTIME, else docker
	kubeconfig string // --kubeconfig, default KUBECONFIG, then ~/.kube/config
	namespace  string // --namespace: where a user's own app runs (kube)
	registry   string // --registry: where a run's images are pushed (kube)

	cl *kube.Cluster // the cluster, once a command reached it (cluster)
}

// labRuntime is the runtime the command line chose (newRootCmd binds it).
var labRuntime = &runtimeOptions{}

// onKube lists the commands that run on --runtime kube today; every other
// command that starts a stack refuses it before it connects.
var onKube = map[string]bool{"doctor": true, "clean": true, "run": true, "verify": true, "trace": true, "ci-smoke": true, "shape verify": true, "place": true, "workers": true}

// noRuntime lists the commands that use no runtime (they read folders or
// print): any --runtime passes through them.
var noRuntime = map[string]bool{"report": true, "compare": true, "apps": true, "agent": true, "help": true, "completion": true, "rttlab": true}

// bind adds the runtime flags to the root command.
func (o *runtimeOptions) bind(cmd *cobra.Command) {
	def := os.Getenv("RTTLAB_RUNTIME")
	if def == "" {
		def = runtimeDocker
	}
	*o = runtimeOptions{}
	cmd.PersistentFlags().StringVar(&o.name, "runtime", def, "where the lab runs: docker (this host's engine) or kube (a Kubernetes cluster); default RTTLAB_RUNTIME, else docker")
	cmd.PersistentFlags().StringVar(&o.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig with --runtime kube (default KUBECONFIG, then ~/.kube/config)")
	cmd.PersistentFlags().StringVar(&o.registry, "registry", "", "with --runtime kube: push the images a run needs to this registry (HOST[:PORT][/PATH], tagged by content) and have the nodes pull them from it, instead of finding them on the nodes")
	cmd.PersistentFlags().StringVar(&o.namespace, "namespace", "", "with --runtime kube: the namespace of your own app (--target), where doctor checks rttlab's rights (default: default)")
}

// check refuses an unknown runtime, and a command that does not run on
// the chosen one yet, before anything connects or is created.
func (o *runtimeOptions) check(cmd *cobra.Command) error {
	switch o.name {
	case runtimeDocker:
		if cmd.Flags().Changed("kubeconfig") || cmd.Flags().Changed("namespace") || cmd.Flags().Changed("registry") {
			return usagef("--kubeconfig, --namespace and --registry go with --runtime kube")
		}
		return nil
	case runtimeKube:
	default:
		return usagef("--runtime %q: use docker (this host's engine) or kube (a Kubernetes cluster)", o.name)
	}
	top := cmd
	for top.Parent() != nil && top.Parent().Parent() != nil {
		top = top.Parent()
	}
	if noRuntime[top.Name()] || onKube[top.Name()] || onKube[cmd.CommandPath()[len("rttlab "):]] {
		return nil
	}
	return usagef("%s --runtime kube: not supported yet: on a cluster, rttlab run, verify, trace, ci-smoke, shape verify, place, workers, doctor and clean run so far (leave --runtime out to run on this host's Docker engine)", cmd.CommandPath()[len("rttlab "):])
}

// clusterLab is the cluster-wide runtime of cl, pulling from --registry
// when one is named.
func (o *runtimeOptions) clusterLab(cl *kube.Cluster) *kube.Lab {
	lab := cl.Runtime()
	lab.Registry = o.registry
	return lab
}

// kubeConnect reaches the cluster of --kubeconfig; unit tests replace it.
var kubeConnect = func(ctx context.Context) (*kube.Cluster, error) { return kube.Connect(ctx, labRuntime.kubeconfig) }

// cluster is the cluster of --kubeconfig, reached once per command: a
// command that checks its plan's nodes and then opens its lab asks the
// apiserver once.
func (o *runtimeOptions) cluster(ctx context.Context) (*kube.Cluster, error) {
	if o.cl != nil {
		return o.cl, nil
	}
	cl, err := kubeConnect(ctx)
	if err == nil {
		o.cl = cl
	}
	return cl, err
}

// kubeDoctor prints the cluster's checks; false when a required one failed.
func kubeDoctor(ctx context.Context, w io.Writer) bool {
	cl, err := labRuntime.cluster(ctx)
	var checks []runtime.Check
	if err != nil {
		checks = []runtime.Check{{Name: "cluster", Required: true, Detail: err.Error(), Fix: "start the cluster (make cluster starts a one-node one here), or name its kubeconfig with --kubeconfig or KUBECONFIG"}}
	} else {
		ns := labRuntime.namespace
		if ns == "" {
			ns = "default"
		}
		checks = cl.Doctor(ctx, stack.AgentImage, ns)
	}
	for _, c := range checks {
		fmt.Fprintln(w, c)
	}
	return !engine.DoctorFailed(checks)
}

// kubeClean removes the namespaces of one run (runID) or of every run on
// the cluster, and says what it removed.
func kubeClean(ctx context.Context, out io.Writer, runID string) error {
	cl, err := labRuntime.cluster(ctx)
	if err != nil {
		return err
	}
	runs := []string{runID}
	if runID == "" {
		if runs, err = cl.Runs(ctx); err != nil {
			return err
		}
	}
	removed, errs := 0, []string{}
	for _, r := range runs {
		n, err := cl.Lab("", r).RemoveRun(ctx, r)
		removed += n
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	fmt.Fprintf(out, "removed %d objects (pods, services, namespaces) of %d run(s) on the cluster\n", removed, len(runs))
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
