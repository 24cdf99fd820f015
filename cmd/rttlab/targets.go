package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// appsTree returns the apps metadata and the tree they were read from.
func appsTree() (map[string]*apps.Meta, fs.FS, string, error) {
	src, _ := engine.FindSource()
	fsys := apps.FS(src)
	all, err := apps.Load(fsys)
	if err != nil {
		return nil, nil, "", err
	}
	return all, fsys, src, nil
}

// connect reaches the engine; unit tests replace it so that no test can
// touch an engine of the machine they run on.
var connect = engine.NewRuntime

// newBuilder builds for platform p (settled: platformFlag.settle), rttlab's
// agent for the engine's own.
func newBuilder(ctx context.Context, rt *engine.Runtime, noCache bool, log io.Writer, p engine.Platform) (*engine.Builder, error) {
	all, fsys, src, err := appsTree()
	if err != nil {
		return nil, err
	}
	info, err := rt.EngineInfo(ctx)
	if err != nil {
		return nil, err
	}
	return &engine.Builder{
		Images:  rt,
		Apps:    all,
		FS:      fsys,
		GOOS:    info.OS,
		GOARCH:  info.Arch,
		SrcDir:  src,
		Version: version,
		Commit:  commit,
		NoCache: noCache,
		Log:     log,
		// Outside a checkout without Go, the first build downloads a
		// toolchain: say so rather than stall silently.
		Progress: stderr,
		Platform: p,
		Native:   []string{"agent"},
	}, nil
}

// imagesFor returns the image folders needed to run the given apps:
// postgres, the agent and each app's folder, without repeats.
func imagesFor(targets []apps.Target, agent bool) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	add("postgres")
	if agent {
		add("agent")
	}
	for _, t := range targets {
		// A user's image is never built: ownImages checks it is there.
		if t.Image == "" {
			add(t.Meta.Name)
		}
	}
	return out
}

// ownImages checks that the users' images of the targets are on the
// engine and returns their IDs by app name.
func ownImages(ctx context.Context, d engine.ImageStore, targets []apps.Target) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range targets {
		if t.Image == "" {
			continue
		}
		if ref := t.Meta.Compose; ref != nil {
			// Every service of the user's file, the app's included.
			if err := stack.CheckComposeImages(ctx, d, *ref); err != nil {
				return nil, err
			}
		}
		id, err := stack.CheckOwnImage(ctx, d, t.Image)
		if err != nil {
			return nil, err
		}
		out[t.Meta.Name] = id
	}
	return out, nil
}

// resolveTargets maps app names (or all apps when empty) to targets.
func resolveTargets(all map[string]*apps.Meta, names []string) ([]apps.Target, error) {
	if len(names) == 0 {
		return apps.Targets(all), nil
	}
	var out []apps.Target
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			if part == "" {
				continue
			}
			t, err := apps.Resolve(all, part)
			if err != nil {
				return nil, usageError{Err: err}
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// connectFor connects to the engine, settles the platform pf asks and
// makes sure the base images, the agent and the images of targets are
// there (built when missing); the caller closes the runtime.
func connectFor(ctx context.Context, targets []apps.Target, w io.Writer, pf *platformFlag) (*engine.Runtime, engine.Platform, error) {
	rt, err := connect(ctx)
	if err != nil {
		return nil, engine.Platform{}, err
	}
	p, err := pf.settle(ctx, rt)
	if err == nil {
		err = ensureImages(ctx, rt, targets, true, p, w)
	}
	if err != nil {
		rt.Close()
		return nil, p, err
	}
	return rt, p, nil
}

// ensureBases makes the base images the images names need on platform p
// (basesFor), saying which it had to make.
func ensureBases(ctx context.Context, rt *engine.Runtime, p engine.Platform, names []string, w io.Writer) error {
	for _, bp := range basesFor(p, names) {
		path, _, err := engine.EnsureBase(ctx, rt, engine.BaseOptions{Progress: w, Platform: bp})
		if err != nil {
			return err
		}
		if path != engine.BasePresent {
			fmt.Fprintf(w, "base image %s: %s\n", bp.BaseRef(), path)
		}
	}
	return nil
}

// ensureImages makes the base images and the images the targets need, for
// platform p (the agent for the engine's own).
func ensureImages(ctx context.Context, rt *engine.Runtime, targets []apps.Target, agent bool, p engine.Platform, w io.Writer) error {
	if _, err := ownImages(ctx, rt, targets); err != nil {
		return err
	}
	if err := ensureBases(ctx, rt, p, imagesFor(targets, agent), w); err != nil {
		return err
	}
	b, err := newBuilder(ctx, rt, false, nil, p)
	if err != nil {
		return err
	}
	return buildEach(ctx, b, imagesFor(targets, agent), 0, nil, func(n string, r engine.Built) {
		fmt.Fprintf(w, "image %-24s %s  %.1fs\n", r.Tag, shortID(r.ID), r.Duration.Seconds())
	})
}

// buildEach builds names with b, parallel at once (0: the engine's
// default), calling built for each image built. The first failure stops
// the builds and is returned, unless skip, where not nil, passes over the
// failed image (true) and the builds go on.
func buildEach(ctx context.Context, b *engine.Builder, names []string, parallel int, skip func(name string, err error) bool, built func(name string, r engine.Built)) error {
	var failed error
	b.BuildEach(ctx, names, parallel, func(n string, r engine.Built, err error) bool {
		if err == nil {
			built(n, r)
			return true
		}
		if skip != nil && skip(n, err) {
			return true
		}
		if failed == nil {
			failed = err
		}
		return false
	})
	return failed
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

var stderr io.Writer = os.Stderr

// loadTarget resolves one app name against the apps tree.
func loadTarget(name string) (apps.Target, error) {
	all, _, _, err := appsTree()
	if err != nil {
		return apps.Target{}, err
	}
	ts, err := resolveTargets(all, []string{name})
	if err != nil {
		return apps.Target{}, err
	}
	return ts[0], nil
}
