package agent

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/internal/session"
)

func newAgentSessionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "session",
		Short: "Run short agent commands sent as JSON lines on stdin, one process for many calls",
		Long: `Reads calls on stdin, one JSON object a line ({"id":1,"args":["ctl","show"]}),
runs each at once in this process (ctl, ping and capture), and writes
their output and exit status as JSON lines on stdout, tagged with the
call's id. {"id":1,"eof":true} closes a call's stdin (a capture started
with --stop-on-eof then stops), {"id":1,"cancel":true} stops it. The
orchestrator keeps one session per agent container for a stack's life:
each call then costs a line each way instead of a docker exec.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return session.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), RunInProcess(NewCmd))
		},
	}
}

// RunInProcess runs a call with a fresh command tree from tree (no flag
// of one call leaks into the next) and returns its exit status as the
// rttlab binary would: 0, 2 for bad input, 1 for a failure, the error
// said on stderr.
func RunInProcess(tree func() *cobra.Command) session.RunFunc {
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		cmd := tree()
		cli.Strict(cmd)
		cmd.SetArgs(args)
		cmd.SetIn(stdin)
		cmd.SetOut(stdout)
		cmd.SetErr(stderr)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.ExecuteContext(ctx)
		if err == nil {
			return 0
		}
		fmt.Fprintf(stderr, "rttlab: %v\n", err)
		var ue cli.UsageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
}
