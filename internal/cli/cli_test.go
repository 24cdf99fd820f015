package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli/clitest"
)

// tree is a small command tree: a group with one leaf that takes one
// argument and a few typed flags.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
	group := &cobra.Command{Use: "shape"}
	leaf := &cobra.Command{Use: "set APP", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return nil }}
	leaf.Flags().Int("runs", 1, "")
	leaf.Flags().Float64("rtt", 0, "")
	leaf.Flags().Bool("yes", false, "")
	leaf.Flags().Duration("for", 0, "")
	leaf.Flags().Uint8("small", 0, "")
	none := &cobra.Command{Use: "down", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
	group.AddCommand(leaf)
	root.AddCommand(group, none)
	Strict(root)
	return root
}

// Under Strict every bad flag value, unknown sub-command and wrong number
// of arguments is a usage error of one line in the user's words; a good
// line runs.
func TestStrict(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shape", "set", "go", "--runs", "ten"}, `--runs "ten" is not a whole number`},
		{[]string{"shape", "set", "go", "--rtt", "x"}, `--rtt "x" is not a number`},
		{[]string{"shape", "set", "go", "--yes=maybe"}, `--yes "maybe" is not true or false`},
		{[]string{"shape", "set", "go", "--for", "5"}, `--for "5" is not a duration (e.g. 500us, 1ms, 2s)`},
		{[]string{"shape", "set", "go", "--small", "300"}, `--small "300" is too large`},
		{[]string{"shape", "sett", "go"}, `unknown command "sett" for "tool shape" (did you mean set?); see 'tool shape --help'`},
		{[]string{"shape", "set"}, "shape set: accepts 1 arg(s), received 0; usage: tool shape set APP"},
		{[]string{"down", "now"}, `down: takes no arguments, got "now"; usage: tool down`},
	} {
		_, err := clitest.Run(tree(), c.args...)
		var ue UsageError
		if !errors.As(err, &ue) || err.Error() != c.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want the usage error %q", c.args, err, c.want)
		}
	}
	if _, err := clitest.Run(tree(), "shape", "set", "go", "--runs", "3"); err != nil {
		t.Errorf("a good line: %v", err)
	}
	// A group without its sub-command shows its help.
	if out, err := clitest.Run(tree(), "shape"); err != nil || !strings.Contains(out, "set") {
		t.Errorf("the group alone: %v, %q", err, out)
	}
}
