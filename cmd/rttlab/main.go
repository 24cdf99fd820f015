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

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/orchestrator"
)

// version and commit are set by the Makefile with -ldflags.
var (
	version = "dev"
	commit  = ""
)

func main() {
	// A closed terminal (SIGHUP) or a reader that went away (SIGPIPE, as
	// in `rttlab run | head`) ends a command as Ctrl-C does: whatever it
	// started is removed, instead of the default death that leaves it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs one command line and returns its exit status: 0, 1 for a
// failure, 2 for bad input, 3 for a round-trip budget not met, 130 when
// interrupted.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		err = usageError{Err: err}
	}
	return exitReport(stderr, err)
}

// exitReport tells the user how a command ended and returns the exit
// status: 0, 2 for bad input, 3 for a round-trip budget not met (and
// nothing else wrong), 130 when interrupted, else 1. Whatever a command
// could not remove is named, never reported as removed.
func exitReport(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "rttlab: %v\n", err)
		return 2
	}
	// Only a gate that failed alone: joined with a failure to remove what
	// the command started, the failure is what to report (exit status 1).
	if _, ok := err.(overBudgetError); ok {
		fmt.Fprintf(w, "rttlab: %v\n", err)
		return exitOverBudget
	}
	var ce *orchestrator.CleanupError
	left := errors.As(err, &ce)
	code := 1
	if errors.Is(err, context.Canceled) {
		code = 130
		if left {
			fmt.Fprintf(w, "rttlab: interrupted; %v\n", ce)
		} else if errors.Is(err, orchestrator.ErrCleanup) {
			fmt.Fprintf(w, "rttlab: interrupted: %v\n", err)
		} else {
			fmt.Fprintln(w, "rttlab: interrupted; everything this command started was removed")
		}
	} else {
		fmt.Fprintf(w, "rttlab: %v\n", err)
		if a := advice(err); a != "" {
			fmt.Fprintf(w, "  fix: %s\n", a)
		}
	}
	if left {
		fmt.Fprintf(w, "  remove what is left with: rttlab clean --run %s\n", ce.RunID)
	}
	var h hintError
	if code == 130 && errors.As(err, &h) {
		fmt.Fprintf(w, "  %s\n", h.hint)
	}
	return code
}

// hintError carries the next step to take after a failure (such as the
// resume command of a results folder); it is shown however the command
// ended, interrupted included.
type hintError struct {
	err  error
	hint string
}

func (e hintError) Error() string { return e.err.Error() + "\n  " + e.hint }
func (e hintError) Unwrap() error { return e.err }

// usageError marks bad input (exit status 2); the agent's commands share it.
type usageError = cli.UsageError

func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

func setupLogging(level string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return usagef("--log-level %q: use debug, info, warn or error", level)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})))
	return nil
}
