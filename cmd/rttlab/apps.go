package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

func newAppsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apps",
		Short: "List the applications rttlab can run",
		Example: `  rttlab apps list
  rttlab apps new myfw --from go`,
	}
	cmd.AddCommand(newAppsListCmd(), newAppsNewCmd())
	return cmd
}

func newAppsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "Show every app with its routes, statements per request, variants and image state",
		Example: "  rttlab apps list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			all, _, _, err := appsTree()
			if err != nil {
				return err
			}
			var rt *engine.Runtime
			if r, err := connect(cmd.Context()); err == nil {
				rt = r
				defer rt.Close()
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "APP\tFOLDER\tVARIANT\tROUTES (statements/request)\tIMAGE")
			for _, t := range apps.Targets(all) {
				var routes []string
				for _, r := range t.Meta.Routes {
					n := fmt.Sprint(r.Statements)
					if r.StatementsPerN {
						n = "n"
					}
					routes = append(routes, fmt.Sprintf("%s(%s)", r.Path, n))
				}
				img := "unknown (no engine)"
				if rt != nil {
					img = imageState(cmd.Context(), rt, t.Meta.Name)
				}
				v := t.Variant
				if v == "" {
					v = "-"
				}
				fmt.Fprintf(tw, "%s\tapps/%s\t%s\t%s\t%s\n", t.Name, t.Meta.Name, v, strings.Join(routes, " "), img)
			}
			return tw.Flush()
		},
	}
}

func imageState(ctx context.Context, rt *engine.Runtime, name string) string {
	id, err := rt.ImageID(ctx, engine.ImageRef(name))
	if err != nil {
		return "not built"
	}
	return "built " + shortID(id)
}
