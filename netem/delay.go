// Package netem puts a one-way delay on a network namespace's packets,
// either with the kernel's netem qdisc on the sender's egress or, where
// the kernel lacks sch_netem, with a userspace NFQUEUE shaper that holds
// them on the run's bridge (the wire hook, which rttlab's stacks use
// unless a hook is asked for) or at a namespace's ingress or egress hook
// (ingress is this package's default when Options.Hook is empty). It also holds the delay parsing and
// split arithmetic, and the milliseconds conversions, shared by the CLI,
// the shaping and the studies.
package netem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxDelay is the largest one-way delay a shaper accepts.
const MaxDelay = time.Second

// Granularity is the resolution of every delay: values are rounded to it.
const Granularity = time.Microsecond

// delayUnits maps the accepted unit suffixes to their length in nanoseconds.
var delayUnits = []struct {
	suffix string
	ns     float64
}{
	// Longer suffixes first so that "ms" is not read as "s".
	{"ns", 1},
	{"us", 1e3},
	{"µs", 1e3}, // U+00B5 micro sign
	{"μs", 1e3}, // U+03BC Greek mu
	{"ms", 1e6},
	{"s", 1e9},
}

// ParseDelay parses a delay with a unit (ns, us, µs, ms, s), such as "0.5ms"
// or "250us"; a number without a unit is milliseconds, as in every list
// of RTT settings ("0.5" is 0.5ms). The result is rounded to 1µs;
// negative values, NaN/Inf, values above 1s and non-zero values below 1µs
// are refused with a one-line error.
func ParseDelay(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("delay is empty: write e.g. 0.5ms or 250us")
	}
	num, unit := in, ""
	for _, u := range delayUnits {
		if strings.HasSuffix(in, u.suffix) {
			num, unit = strings.TrimSpace(strings.TrimSuffix(in, u.suffix)), u.suffix
			break
		}
	}
	if unit == "" {
		if t := strings.TrimRight(in, "abcdfghijklmnopqrtuvwxyzABCDFGHIJKLMNOPQRTUVWXYZ"); t != in && !isNaNOrInf(in) {
			if _, err := strconv.ParseFloat(t, 64); err == nil {
				return 0, fmt.Errorf("delay %q has an unknown unit: use ns, us, µs, ms or s, e.g. %sms", s, t)
			}
		}
		v, err := parseAmount(s, in)
		if err != nil {
			return 0, err
		}
		return toDelay(s, v*1e6)
	}
	var scale float64
	for _, u := range delayUnits {
		if u.suffix == unit {
			scale = u.ns
		}
	}
	v, err := parseAmount(s, num)
	if err != nil {
		return 0, err
	}
	return toDelay(s, v*scale)
}

// SplitRTT splits a round-trip delay into the two one-way delays (the
// app side's and the database side's): half each in whole units of the
// 1µs granularity, with the odd microsecond (if any) on the database side,
// so that app+db == rtt and neither half is rounded again when it is set
// (a 25µs RTT becomes 12 + 13µs, not 13 + 13).
func SplitRTT(rtt time.Duration) (app, db time.Duration) {
	app = (rtt / 2).Truncate(Granularity)
	return app, rtt - app
}

// ValidateDelay checks a delay that did not come from ParseDelay.
func ValidateDelay(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("delay %v is negative: use a value from 0 to %v", d, MaxDelay)
	case d > MaxDelay:
		return fmt.Errorf("delay %v is above the %v maximum: use a value from 0 to %v", d, MaxDelay, MaxDelay)
	}
	return nil
}

func isNaNOrInf(s string) bool {
	l := strings.ToLower(strings.TrimLeft(s, "+-"))
	return l == "nan" || l == "inf" || l == "infinity"
}

// parseAmount parses the numeric part of a delay; orig is the user's text
// for error messages.
func parseAmount(orig, num string) (float64, error) {
	if isNaNOrInf(num) {
		return 0, fmt.Errorf("delay %q is not a finite number: write e.g. 0.5ms", orig)
	}
	if strings.HasPrefix(num, "-") {
		return 0, fmt.Errorf("delay %q is negative: use a value from 0 to %v", orig, MaxDelay)
	}
	if strings.HasPrefix(num, "+") {
		num = num[1:]
	}
	if num == "" || strings.ContainsAny(num, "xXpP_") {
		return 0, fmt.Errorf("delay %q is not a number: write e.g. 0.5ms or 250us", orig)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("delay %q is not a number: write e.g. 0.5ms or 250us", orig)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("delay %q is not a finite number: write e.g. 0.5ms", orig)
	}
	if v < 0 {
		return 0, fmt.Errorf("delay %q is negative: use a value from 0 to %v", orig, MaxDelay)
	}
	return v, nil
}

// toDelay range-checks a non-negative amount of nanoseconds and rounds it
// to the 1µs granularity.
func toDelay(orig string, ns float64) (time.Duration, error) {
	if ns > float64(MaxDelay) {
		return 0, fmt.Errorf("delay %q is above the %v maximum: use a value from 0 to %v", orig, MaxDelay, MaxDelay)
	}
	us := math.Round(ns / float64(Granularity))
	if ns > 0 && us == 0 {
		return 0, fmt.Errorf("delay %q is below the 1µs granularity: use 0 or at least 1us", orig)
	}
	return time.Duration(us) * Granularity, nil
}

// FromMs is a delay of v milliseconds, rounded to the microsecond.
func FromMs(v float64) time.Duration { return time.Duration(v*1e3+0.5) * time.Microsecond }

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
