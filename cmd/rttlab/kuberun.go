package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/report"
)

// kubeEngine is what a study records as its engine on a cluster: the
// first node that takes pods, and the apiserver's version.
type kubeEngine struct{ cl *kube.Cluster }

func (k kubeEngine) EngineInfo(ctx context.Context) (engine.EngineInfo, error) {
	n, err := k.cl.Node(ctx)
	if err != nil {
		return engine.EngineInfo{}, err
	}
	return engine.EngineInfo{Version: "kubernetes " + n.Server + ", node " + n.Name + " (kubelet " + n.Kubelet + ", " + n.Runtime + ")",
		APIVersion: n.Server, OS: n.OS, Arch: n.Arch, Kernel: n.Kernel, CPUs: n.CPUs, MemBytes: n.MemBytes}, nil
}

// kubeImages checks that every node has the images the targets' stacks
// start, and returns them by app, as a Docker run records the IDs it
// built: on a cluster without a registry rttlab does not build, the
// images are imported into each node's containerd first.
func kubeImages(ctx context.Context, rt runtime.Images, targets []apps.Target) (map[string]string, error) {
	out := map[string]string{}
	var built []apps.Target // the targets whose stack rttlab starts
	for _, t := range targets {
		if t.Meta.Running == nil {
			built = append(built, t)
		}
	}
	names := []string{"agent"}
	if len(built) > 0 {
		names = imagesFor(built, true)
	}
	for _, n := range names {
		ref := engine.ImageRef(n)
		if err := rt.EnsureImage(ctx, ref); err != nil {
			if errors.Is(err, runtime.ErrNotFound) {
				return nil, fmt.Errorf("%w (rttlab images build %s builds it on this host's engine first)", err, n)
			}
			return nil, err
		}
		out[n] = ref
	}
	for _, t := range targets {
		if t.Image == "" {
			continue
		}
		if err := rt.EnsureImage(ctx, t.Image); err != nil {
			return nil, err
		}
		out[t.Name] = t.Image
	}
	return out, nil
}

// runKube runs (or resumes) the plan on the cluster of --kubeconfig:
// each app's stack in a namespace of its own run, the shapers and
// captures in its pods' network namespaces (sessions of a node agent).
func (o *runOptions) runKube(cmd *cobra.Command, all map[string]*apps.Meta) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	p := o.p
	cl, err := kubeConnect(ctx)
	if err != nil {
		return err
	}
	eng := kubeEngine{cl}
	plat, err := o.platform.settle(ctx, eng)
	if err != nil {
		return err
	}
	if plat.Foreign() {
		return usagef("--platform %s: a cluster runs its nodes' own platform: leave --platform out on --runtime kube", plat)
	}
	p.Platform, p.Emulated = plat.String(), false
	if err := rtt.AddOwnApps(p, all); err != nil {
		return err
	}
	var targets []apps.Target
	for _, a := range p.Apps {
		t, err := apps.Resolve(all, a.Name)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	if err := checkKubeTargets(ctx, cl, targets); err != nil {
		return err
	}
	rt := cl.Runtime()
	images, err := kubeImages(ctx, rt, targets)
	if err != nil {
		return err
	}
	var sum *report.Summary
	ro := rtt.RunOptions{Plan: p, OutDir: o.out, Resume: o.resume, Version: version, Commit: commit,
		Images: images, Progress: newProgress(cmd.ErrOrStderr()),
		Rendered: func(s *report.Summary) { sum = s }}
	start := time.Now()
	dir, err := rtt.Run(ctx, rt, eng, all, ro)
	if dir != "" {
		printStudyEnd(out, cmd.ErrOrStderr(), report.Study{Rendered: sum}, dir, start, err == nil)
	}
	if err != nil && dir != "" {
		return hintError{err, resumeHint(studyOf(results.KindRTT), dir)}
	}
	if err != nil {
		return err
	}
	return gateRun(out, dir, p, all, nil)
}

// openLab is the lab of --runtime for a command that starts the targets'
// stacks: Docker's engine, the images built or pulled as the command
// always did, or a cluster, the images on its nodes and an app given by
// --target found where it runs; done ends the connection.
func openLab(ctx context.Context, targets []apps.Target, w io.Writer, pf *platformFlag) (runtime.Runtime, engine.Platform, func(), error) {
	if labRuntime.name != runtimeKube {
		rt, plat, err := connectFor(ctx, targets, w, pf)
		if err != nil {
			return nil, plat, nil, err
		}
		return engine.NewLab(rt, ""), plat, func() { rt.Close() }, nil
	}
	cl, err := kubeConnect(ctx)
	if err != nil {
		return nil, engine.Platform{}, nil, err
	}
	plat, err := pf.settle(ctx, kubeEngine{cl})
	if err != nil {
		return nil, plat, nil, err
	}
	if plat.Foreign() {
		return nil, plat, nil, usagef("--platform %s: a cluster runs its nodes' own platform: leave --platform out on --runtime kube", plat)
	}
	if err := checkKubeTargets(ctx, cl, targets); err != nil {
		return nil, plat, nil, err
	}
	lab := cl.Runtime()
	if _, err := kubeImages(ctx, lab, targets); err != nil {
		return nil, plat, nil, err
	}
	return lab, plat, func() {}, nil
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
