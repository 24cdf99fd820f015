package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/placement"
)

// kubeEngine is what a study records as its engine on a cluster: the
// first node that takes pods, and the apiserver's version.
type kubeEngine struct {
	cl  *kube.Cluster
	lab *kube.Lab // whose images it names
}

// ImageID is the image a member of a cluster runs: its reference, the
// pushed one where rttlab pushed it (tagged by content), since the nodes
// hold no ID rttlab could read.
func (k kubeEngine) ImageID(_ context.Context, ref string) (string, error) {
	return k.lab.Pulled(ref), nil
}

func (k kubeEngine) EngineInfo(ctx context.Context) (engine.EngineInfo, error) {
	n, err := k.cl.Node(ctx)
	if err != nil {
		return engine.EngineInfo{}, err
	}
	return engine.EngineInfo{Version: "kubernetes " + n.Server + ", node " + n.Name + " (kubelet " + n.Kubelet + ", " + n.Runtime + ")",
		APIVersion: n.Server, OS: n.OS, Arch: n.Arch, Kernel: n.Kernel, CPUs: n.CPUs, MemBytes: n.MemBytes}, nil
}

// kubeImages makes sure the cluster has the images the targets' stacks
// start, and returns them by app, as a Docker run records the IDs it
// built. Without --registry rttlab builds nothing for a cluster: the
// images must be on every node already (imported into its containerd).
// With --registry they are built on this host's engine as a Docker run
// builds them and pushed there, tagged by content, and the nodes pull
// them. A user's own image is used as it is.
func kubeImages(ctx context.Context, lab *kube.Lab, targets []apps.Target, plat engine.Platform, w io.Writer) (map[string]string, error) {
	out := map[string]string{}
	// The targets whose stack rttlab starts (PostgreSQL from its image,
	// the app from its own unless a user's), and those of them whose app
	// image it builds too.
	var stacks, built []apps.Target
	for _, t := range targets {
		if t.Meta.Running == nil {
			stacks = append(stacks, t)
			if t.Image == "" {
				built = append(built, t)
			}
		}
	}
	names := imagesFor(stacks, true)
	if len(stacks) == 0 {
		names = []string{"agent"}
	}
	if lab.Registry != "" {
		pushed, err := pushImages(ctx, lab.Registry, names, built, plat, w)
		if err != nil {
			return nil, err
		}
		lab.Pushed = pushed
		for _, n := range names {
			out[n] = pushed[engine.ImageRef(n)]
		}
	} else {
		for _, n := range names {
			ref := engine.ImageRef(n)
			if err := lab.EnsureImage(ctx, ref); err != nil {
				if errors.Is(err, runtime.ErrNotFound) {
					return nil, fmt.Errorf("%w (rttlab images build %s builds it on this host's engine first)", err, n)
				}
				return nil, err
			}
			out[n] = ref
		}
	}
	for _, t := range targets {
		if t.Image == "" {
			continue
		}
		if err := lab.EnsureImage(ctx, t.Image); err != nil {
			return nil, err
		}
		out[t.Name] = t.Image
	}
	return out, nil
}

// pushImages builds rttlab's images names on this host's engine (as run
// does on Docker) and pushes each to registry as
// REGISTRY/rttlab/NAME:<its ID's first 12 hex digits>, returning the
// pushed reference by the one a member names.
func pushImages(ctx context.Context, registry string, names []string, built []apps.Target, plat engine.Platform, w io.Writer) (map[string]string, error) {
	rt, err := connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("--registry: the images are built and pushed from this host's Docker engine: %w", err)
	}
	defer rt.Close()
	if err := ensureImages(ctx, rt, built, true, plat, w); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		ref := engine.ImageRef(n)
		id, err := rt.ImageID(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", ref, err)
		}
		repo, _, _ := strings.Cut(ref, ":")
		dst := strings.TrimSuffix(registry, "/") + "/" + repo + ":" + shortID(id)
		if err := rt.PushImage(ctx, ref, dst); err != nil {
			return nil, fmt.Errorf("--registry %s: %w", registry, err)
		}
		fmt.Fprintf(w, "image %s pushed as %s\n", ref, dst)
		out[ref] = dst
	}
	return out, nil
}

// labEngine is what a study's manifest records of the engine its lab
// runs on: Docker's (*engine.Runtime) or a cluster's (kubeEngine).
type labEngine = placement.Engine

// runLab is where a study runs: the runtime, the engine its manifest
// names, whether a platform runs there, and how the targets' images get
// there (by app, with the apps skipped and why).
type runLab struct {
	rt       runtime.Runtime
	eng      labEngine
	platform func(engine.Platform) error
	images   func([]apps.Target, engine.Platform) (images, skipped map[string]string, err error)
	close    func()
}

// runLabFor is the lab of --runtime for run: this host's Docker engine,
// the images built there (an image that cannot be built skips its app);
// or the cluster (kubeLab).
func runLabFor(cmd *cobra.Command) (*runLab, error) {
	ctx := cmd.Context()
	if labRuntime.name == runtimeKube {
		return kubeLab(ctx, cmd.ErrOrStderr())
	}
	rt, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	return &runLab{rt: engine.NewLab(rt, ""), eng: rt, platform: func(engine.Platform) error { return nil },
		images: func(targets []apps.Target, plat engine.Platform) (map[string]string, map[string]string, error) {
			return buildForRun(cmd, rt, targets, plat)
		},
		close: func() { rt.Close() }}, nil
}

// kubeLab is the lab of the cluster of --kubeconfig: each app's stack in
// a namespace of its run, the shapers and captures in its pods' network
// namespaces (sessions of a node agent), only the nodes' own platform,
// the images found on its nodes or pushed to --registry, and an app
// given by --target found before anything is created; w gets the images'
// progress.
func kubeLab(ctx context.Context, w io.Writer) (*runLab, error) {
	cl, err := labRuntime.cluster(ctx)
	if err != nil {
		return nil, err
	}
	lab := labRuntime.clusterLab(cl)
	return &runLab{rt: lab, eng: kubeEngine{cl: cl, lab: lab}, platform: kubePlatform,
		images: func(targets []apps.Target, plat engine.Platform) (map[string]string, map[string]string, error) {
			if err := checkKubeTargets(ctx, cl, targets); err != nil {
				return nil, nil, err
			}
			images, err := kubeImages(ctx, lab, targets, plat, w)
			return images, nil, err
		},
		close: func() {}}, nil
}

// kubePlatform refuses a platform other than the nodes' own: a cluster
// runs no emulation.
func kubePlatform(plat engine.Platform) error {
	if plat.Foreign() {
		return usagef("--platform %s: a cluster runs its nodes' own platform: leave --platform out on --runtime kube", plat)
	}
	return nil
}

// openLab is the lab of --runtime for a command that starts the targets'
// stacks, with the platform pf settles: Docker's engine, the images
// built or pulled as the command always did (one that cannot be built
// is an error), or a cluster (kubeLab). The caller closes it.
func openLab(ctx context.Context, targets []apps.Target, w io.Writer, pf *platformFlag) (*runLab, engine.Platform, error) {
	if labRuntime.name != runtimeKube {
		rt, plat, err := connectFor(ctx, targets, w, pf)
		if err != nil {
			return nil, plat, err
		}
		return &runLab{rt: engine.NewLab(rt, ""), eng: rt, close: func() { rt.Close() }}, plat, nil
	}
	lab, err := kubeLab(ctx, w)
	if err != nil {
		return nil, engine.Platform{}, err
	}
	plat, err := pf.settle(ctx, lab.eng)
	if err == nil {
		err = lab.platform(plat)
	}
	if err == nil {
		_, _, err = lab.images(targets, plat)
	}
	if err != nil {
		return nil, plat, err
	}
	return lab, plat, nil
}

// checkKubeNodes checks, before anything is created, that the cluster
// has each of the nodes a plan pins members to (names), Ready and taking
// pods; none to check without pins (a plan with pins runs on a cluster
// only: prepare refuses it on Docker).
func checkKubeNodes(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	cl, err := labRuntime.cluster(ctx)
	if err != nil {
		return err
	}
	return cl.CheckNodes(ctx, names)
}

// checkKubeTargets refuses what a cluster does not run yet (a compose
// file) and finds each --target and --db-target before anything is
// created: one that is not there is one line, and the cluster stays as
// it was.
func checkKubeTargets(ctx context.Context, cl *kube.Cluster, targets []apps.Target) error {
	for _, t := range targets {
		if t.Meta.Compose != nil {
			return usagef("app %s: a compose file starts on Docker only so far: on --runtime kube, run rttlab's own apps, an --app-image, or your app where it runs (--target)", t.Name)
		}
		if r := t.Meta.Running; r != nil {
			if err := cl.CheckTarget(ctx, r.Namespace, r.App, r.Container); err != nil {
				return fmt.Errorf("--target: %w", err)
			}
			if err := cl.CheckTarget(ctx, r.Namespace, r.DB, ""); err != nil {
				return fmt.Errorf("--db-target: %w", err)
			}
		}
	}
	return nil
}
