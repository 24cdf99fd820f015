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
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// version and commit are set by the Makefile with -ldflags.
var (
	version = "dev"
	commit  = ""
)

func main() {
	// A closed terminal (SIGHUP, unless started under nohup) ends a
	// command as Ctrl-C does: whatever it started is removed, instead of
	// the default death that leaves it.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	// So does a reader of the output that went away (rttlab run | head):
	// with SIGPIPE ignored a write to it fails with EPIPE instead of
	// killing rttlab, and the output's writer then cancels the command.
	// (Asking for SIGPIPE instead would deliver it for every socket's
	// EPIPE, the load client's and the proxy's included.)
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(ctx)
	code := execute(ctx, os.Args[1:], cancelOnEPIPE{os.Stdout, cancel}, cancelOnEPIPE{os.Stderr, cancel})
	cancel()
	stop()
	os.Exit(code)
}

// cancelOnEPIPE is an output whose reader may go away: a write that fails
// with EPIPE cancels the command, as an interrupt does.
type cancelOnEPIPE struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c cancelOnEPIPE) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		c.cancel()
	}
	return n, err
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
	var ce *stack.CleanupError
	left := errors.As(err, &ce)
	code := 1
	if errors.Is(err, context.Canceled) {
		code = 130
		if left {
			fmt.Fprintf(w, "rttlab: interrupted; %v\n", ce)
		} else if errors.Is(err, stack.ErrCleanup) {
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
