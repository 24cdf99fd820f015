package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/spf13/cobra"
)

func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Make the base image and build the app images",
		Example: `  rttlab images base
  rttlab images build go node`,
	}
	cmd.AddCommand(newImagesBaseCmd(), newImagesBuildCmd())
	return cmd
}

type imagesBaseOptions struct {
	ref      string
	skipPull bool
	mirror   string
	verbose  bool
	platform platformFlag
}

func newImagesBaseCmd() *cobra.Command {
	o := &imagesBaseOptions{}
	cmd := &cobra.Command{
		Use:     "base",
		Short:   "Make sure debian:trixie-slim exists (present, pulled, or built with debootstrap)",
		Example: `  rttlab images base       make the Debian base image from Debian's archive (once)`,
		Long: `Every rttlab Dockerfile starts FROM debian:trixie-slim. This command makes
sure that image exists: when present it does nothing; when a registry
answers it pulls it; otherwise it builds it with
'debootstrap --variant=minbase trixie' (about a minute; needs root and the
debootstrap package) and imports the tree through the Engine API.
It prints which path was taken.

With --platform of another architecture than the engine's (a DGX's on a
laptop), the tree is debootstrapped for that architecture under qemu
emulation (a few minutes) and tagged rttlab/debian:trixie-slim-<arch>,
which builds for that platform start from.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.platform.parse() },
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, err := connect(ctx)
			if err != nil {
				return err
			}
			defer rt.Close()
			p, err := o.platform.settle(ctx, rt)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("tag") {
				o.ref = p.BaseRef()
			}
			bo := engine.BaseOptions{Ref: o.ref, SkipPull: o.skipPull, Mirror: o.mirror, Platform: p}
			if o.verbose {
				bo.Log = os.Stderr
			} else {
				bo.Progress = cmd.ErrOrStderr()
			}
			start := time.Now()
			path, id, err := engine.EnsureBase(ctx, rt, bo)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "base image %s: %s (%s, %.1fs)\n", o.ref, path, shortID(id), time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.ref, "tag", engine.BaseImage, "image reference to ensure")
	cmd.Flags().BoolVar(&o.skipPull, "skip-pull", false, "do not try a registry; build with debootstrap when absent")
	cmd.Flags().StringVar(&o.mirror, "mirror", "http://deb.debian.org/debian", "Debian mirror for debootstrap")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "show debootstrap output")
	o.platform.add(cmd.Flags())
	return cmd
}

type imagesBuildOptions struct {
	noCache  bool
	verbose  bool
	parallel int
	platform platformFlag
}

func newImagesBuildCmd() *cobra.Command {
	o := &imagesBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build [APP...]",
		Short: "Build app images from apps/<name>/ (all when none named)",
		Long: `Builds rttlab/<name>:latest from the apps/<name>/ build context through the
Engine API (the contexts are embedded in rttlab; inside a checkout the
checkout's apps/ folder is used, so a new folder needs no rebuild of
rttlab). Go programs an image needs are cross-built on this host for the
engine's OS and architecture first. Unchanged contexts reuse the build
cache. Prints each image's tag, ID and build time. With no name given, an
image whose package registry this host cannot reach (the line its build
prints says so) is skipped with that line, as 'rttlab run' skips it.

--platform of another architecture than the engine's (a DGX's on a laptop)
builds the images for that platform under qemu emulation, tagged
rttlab/<name>:latest-<arch> beside the engine's own; the agent is always
built for the engine's own platform, since it shapes and measures.`,
		Example: `  rttlab images build              # postgres, agent and every app
  rttlab images build postgres go  # just these`,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if err := o.platform.parse(); err != nil {
				return err
			}
			return o.prepare(args)
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().BoolVar(&o.noCache, "no-cache", false, "do not use the build cache")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "show build output")
	cmd.Flags().IntVarP(&o.parallel, "parallel", "j", engine.DefaultBuildParallel, "images built at once")
	o.platform.add(cmd.Flags())
	return cmd
}

// prepare checks the names of the images to build before the engine is
// touched.
func (o *imagesBuildOptions) prepare(args []string) error {
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	for _, n := range args {
		if _, ok := all[n]; !ok {
			if _, err := resolveTargets(all, []string{n}); err != nil {
				return err
			}
		}
	}
	return nil
}

// run makes sure of the base image, then builds the images named (every
// one when none is) and prints a line per image built.
func (o *imagesBuildOptions) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	rt, err := connect(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	out := cmd.OutOrStdout()
	p, err := o.platform.settle(ctx, rt)
	if err != nil {
		return err
	}
	var log = os.Stderr
	b, err := newBuilder(ctx, rt, o.noCache, nil, p)
	if err != nil {
		return err
	}
	if o.verbose {
		b.Log = log
	}
	all := len(args) == 0
	names, err := imageNames(b, args)
	if err != nil {
		return err
	}
	for _, bp := range basesFor(p, names) {
		path, _, err := engine.EnsureBase(ctx, rt, engine.BaseOptions{Progress: cmd.ErrOrStderr(), Platform: bp})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "base image %s: %s\n", bp.BaseRef(), path)
	}
	skip := func(n string, err error) bool {
		reason, ok := engine.SkipReason(err)
		if ok && all {
			// Building every image: one this host cannot reach the
			// package registry of is skipped, as a run skips it.
			fmt.Fprintf(out, "%-26s skipped: %s\n", n, reason)
		}
		return ok && all
	}
	return buildEach(ctx, b, names, o.parallel, skip, func(n string, r engine.Built) {
		fmt.Fprintf(out, "%-26s %s  %6.1fs\n", r.Tag, shortID(r.ID), r.Duration.Seconds())
	})
}

// basesFor is the platforms whose base images the names need on p: p's,
// and the engine's own for the agent when p is foreign.
func basesFor(p engine.Platform, names []string) []engine.Platform {
	var out []engine.Platform
	if !p.Foreign() || slices.ContainsFunc(names, func(n string) bool { return n != "agent" }) {
		out = append(out, p)
	}
	if p.Foreign() && slices.Contains(names, "agent") {
		out = append(out, p.Native())
	}
	return out
}

// imageNames is the images the names given stand for (an app's variant,
// <app>-<variant>, is its app's image), every one of the builder's when
// none is given. The names are replaced in place.
func imageNames(b *engine.Builder, names []string) ([]string, error) {
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(b.Apps))
	}
	for i, n := range names {
		if t, ok := b.Apps[n]; ok {
			names[i] = t.Name
			continue
		}
		t, err := resolveTargets(b.Apps, []string{n})
		if err != nil {
			return nil, err
		}
		names[i] = t[0].Meta.Name
	}
	return names, nil
}
