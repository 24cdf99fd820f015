// Command rttlab measures what a fraction of a millisecond between an
// application and its database costs the application's users.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// version and commit are set by the Makefile with -ldflags.
var (
	version = "dev"
	commit  = ""
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "rttlab: %v\n", err)
			os.Exit(2)
		}
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "rttlab: interrupted; everything this command started was removed")
			os.Exit(130)
		}
		fmt.Fprintf(os.Stderr, "rttlab: %v\n", err)
		os.Exit(1)
	}
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
