package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

type appsNewOptions struct {
	from string
	dir  string
}

func newAppsNewCmd() *cobra.Command {
	o := &appsNewOptions{}
	cmd := &cobra.Command{
		Use:   "new NAME --from go|node|rails|axum",
		Short: "Scaffold apps/NAME from an existing framework app",
		Long: `Copies apps/FROM (a complete implementation of the route contract) into
apps/NAME with its metadata renamed and a README listing the edits to make.
Fill in your framework, then:

  rttlab images build NAME
  rttlab verify NAME
  rttlab run --plan smoke --apps NAME --routes /feed,/feed-naive

Inside a checkout the new folder is picked up without rebuilding rttlab.
A Go template becomes a new main package of this module (./apps/NAME).`,
		Example: `  rttlab apps new myfw --from rails
  rttlab apps new myfw --from go --dir ./apps`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(apps.Templates, o.from) {
				return usagef("--from %q: use one of %s", o.from, strings.Join(apps.Templates, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := o.dir
			if dir == "" {
				var err error
				if dir, err = checkoutApps(); err != nil {
					return err
				}
			}
			files, err := apps.Scaffold(dir, args[0], o.from)
			if err != nil {
				return usageError{Err: err}
			}
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
			for _, f := range files {
				fmt.Fprintf(cmd.OutOrStdout(), "created %s\n", filepath.Join(dir, strings.TrimPrefix(f, "apps/")))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "next: edit %s (see its README.md), then rttlab verify %s\n", filepath.Join(dir, args[0]), args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "go", "template app: go, node, rails or axum")
	cmd.Flags().StringVar(&o.dir, "dir", "", "apps folder to write into (default: the checkout's apps/)")
	return cmd
}

// checkoutApps is the apps/ folder of the checkout the working folder is
// in (or RTTLAB_SRC's): never, silently, that of a checkout the binary
// happens to sit in.
func checkoutApps() (string, error) {
	src, err := engine.FindSource()
	if err != nil {
		return "", usagef("apps new writes into a checkout's apps/ folder: %v (or pass --dir)", err)
	}
	if os.Getenv("RTTLAB_SRC") == "" {
		wd, _ := os.Getwd()
		if rel, err := filepath.Rel(src, wd); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", usagef("apps new writes into a checkout's apps/ folder and the working folder is not in one: run it inside the checkout (%s) or pass --dir", src)
		}
	}
	return filepath.Join(src, "apps"), nil
}
