package agent

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

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
// "agent") as a session runs a call (RunInProcess: the binary's exit
// status, 0, 1, or 2 for bad input) and returns it, stdout, and stderr
// with the error.
func execLine(ctx context.Context, args ...string) (int, string, string) {
	return execLineIn(ctx, strings.NewReader(""), args...)
}

// execLineIn is execLine with stdin.
func execLineIn(ctx context.Context, stdin io.Reader, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := RunInProcess(NewCmd)(ctx, args[1:], stdin, &out, &errb)
	return code, out.String(), errb.String()
}
