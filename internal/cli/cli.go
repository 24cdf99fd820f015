// Package cli holds what the rttlab binary's command trees share: the mark
// that an error is the user's input (exit status 2), not a failure, and
// the rule that makes every flag and argument error one (Strict).
package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// UsageError marks bad input: a flag, an argument or a file the user gave.
// The binary exits with status 2 and prints the error on one line.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }

// Usagef formats a usage error.
func Usagef(format string, a ...any) error { return UsageError{Err: fmt.Errorf(format, a...)} }

// Strict makes every bad flag and every wrong number of positional
// arguments of c's tree a usage error of one line: the rttlab command
// line and each call an agent session runs in process alike.
func Strict(c *cobra.Command) {
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{Err: flagError(err)} })
	usageArgs(c)
}

// usageArgs makes every wrong number of positional arguments a usage
// error (exit status 2) of one line that shows the command's usage, and an
// unknown sub-command of a command group one too.
func usageArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
	if c.HasSubCommands() {
		// A mistyped sub-command's flags are not the parent's: let the
		// parent take them so that the error names the sub-command.
		c.FParseErrWhitelist.UnknownFlags = true
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
			}
			return Usagef("%s; see '%s --help'", msg, c.CommandPath())
		}
		if !c.Runnable() {
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		return
	}
	check := c.Args
	if check == nil {
		return
	}
	c.Args = func(c *cobra.Command, args []string) error {
		err := check(c, args)
		if err == nil {
			return nil
		}
		what := err.Error()
		if strings.HasPrefix(what, "unknown command") && len(args) > 0 {
			what = fmt.Sprintf("takes no arguments, got %q", args[0])
		}
		name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
		return Usagef("%s: %s; usage: %s", name, what, strings.TrimSuffix(c.UseLine(), " [flags]"))
	}
}

var invalidFlagRE = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// flagError words a flag's parse error for the user rather than in Go's
// terms: --runs "ten" is not a whole number, not strconv.ParseInt's
// message.
func flagError(err error) error {
	m := invalidFlagRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, flag, why := m[1], m[2], m[3]
	switch {
	case strings.Contains(why, "value out of range"):
		why = "is too large"
	case strings.Contains(why, "ParseInt") || strings.Contains(why, "ParseUint") || strings.Contains(why, "Atoi"):
		why = "is not a whole number"
	case strings.Contains(why, "ParseFloat"):
		why = "is not a number"
	case strings.Contains(why, "ParseBool"):
		why = "is not true or false"
	case strings.HasPrefix(why, "time: "):
		why = "is not a duration (e.g. 500us, 1ms, 2s)"
	default:
		why = "is not valid: " + why
	}
	return fmt.Errorf("%s %q %s", flag, value, why)
}
