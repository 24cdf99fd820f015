// Package clitest runs the binary's command trees in tests.
package clitest

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"
)

// Run executes one command line of cmd, as the binary would, and returns
// what it printed (standard output and error together).
func Run(cmd *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}
