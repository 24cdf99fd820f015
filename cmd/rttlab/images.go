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
It prints which path was taken.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, err := connect(ctx)
			if err != nil {
				return err
			}
			defer rt.Close()
			bo := engine.BaseOptions{Ref: o.ref, SkipPull: o.skipPull, Mirror: o.mirror}
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
	return cmd
}

type imagesBuildOptions struct {
	noCache  bool
	verbose  bool
	parallel int
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
cache. Prints each image's tag, ID and build time.`,
		Example: `  rttlab images build              # postgres, agent and every app
  rttlab images build postgres go  # just these`,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(args) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().BoolVar(&o.noCache, "no-cache", false, "do not use the build cache")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "show build output")
	cmd.Flags().IntVarP(&o.parallel, "parallel", "j", engine.DefaultBuildParallel, "images built at once")
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
	path, _, err := engine.EnsureBase(ctx, rt, engine.BaseOptions{Progress: cmd.ErrOrStderr()})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "base image %s: %s\n", engine.BaseImage, path)
	var log = os.Stderr
	b, err := newBuilder(ctx, rt, o.noCache, nil)
	if err != nil {
		return err
	}
	if o.verbose {
		b.Log = log
	}
	names, err := imageNames(b, args)
	if err != nil {
		return err
	}
	var failed error
	b.BuildEach(ctx, names, o.parallel, func(n string, r engine.Built, err error) bool {
		if err != nil {
			if failed == nil {
				failed = err
			}
			return false
		}
		fmt.Fprintf(out, "%-26s %s  %6.1fs\n", r.Tag, shortID(r.ID), r.Duration.Seconds())
		return true
	})
	return failed
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
