package agent

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/internal/cli/clitest"
)

// run executes one `agent` command line, as the binary's `rttlab agent`
// would, and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clitest.Run(NewCmd(), args...)
}

func TestHelpers(t *testing.T) {
	if dirOf("/run/rttlab/agent.sock") != "/run/rttlab" || dirOf("sock") != "." {
		t.Error("dirOf")
	}
	if h, err := parseHeaders([]string{"A: 1", " B :2 "}); err != nil || h["A"] != "1" || h["B"] != "2" {
		t.Errorf("headers %v %v", h, err)
	}
}

// execLine runs one `rttlab agent ...` command line (args start with
// "agent") and returns the exit status the binary would give (0, 1, or 2
// for bad input), stdout, and stderr followed by the error.
func execLine(ctx context.Context, args ...string) (int, string, string) {
	cmd := NewCmd()
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args[1:])
	err := cmd.ExecuteContext(ctx)
	code := 0
	if err != nil {
		code = 1
		var ue cli.UsageError
		if errors.As(err, &ue) {
			code = 2
		}
		errb.WriteString(err.Error() + "\n")
	}
	return code, out.String(), errb.String()
}
