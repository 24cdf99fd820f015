// Package cli holds what the rttlab binary's command trees share: the mark
// that an error is the user's input (exit status 2), not a failure.
package cli

import "fmt"

// UsageError marks bad input: a flag, an argument or a file the user gave.
// The binary exits with status 2 and prints the error on one line.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }

// Usagef formats a usage error.
func Usagef(format string, a ...any) error { return UsageError{Err: fmt.Errorf(format, a...)} }
