// Command rttlab measures what a fraction of a millisecond between an
// application and its database costs the application's users.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rttlab/rttlab/orchestrator"
)

// version and commit are set by the Makefile with -ldflags.
var (
	version = "dev"
	commit  = ""
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs one command line and returns its exit status: 0, 1 for a
// failure, 2 for bad input, 130 when interrupted.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ue usageError
	switch {
	case errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command "):
		fmt.Fprintf(stderr, "rttlab: %v\n", err)
		return 2
	case errors.Is(err, context.Canceled) && errors.Is(err, orchestrator.ErrCleanup):
		fmt.Fprintf(stderr, "rttlab: interrupted: %v\n", err)
		return 130
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "rttlab: interrupted; everything this command started was removed")
		return 130
	}
	fmt.Fprintf(stderr, "rttlab: %v\n", err)
	return 1
}

// usageError marks bad input (exit status 2).
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func setupLogging(level string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return usagef("--log-level %q: use debug, info, warn or error", level)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})))
	return nil
}
