package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Capacity search defaults.
const (
	DefaultMinThroughput = 0.95
	DefaultMaxFailures   = 0.01
	DefaultPrecision     = 0.05
)

// CapacityCriteria says when an open-loop trial counts as sustained.
type CapacityCriteria struct {
	// MinThroughput is the least Throughput/OfferedRate; zero means
	// DefaultMinThroughput.
	MinThroughput float64
	// MaxFailures is the largest share of measured requests that may
	// fail; zero means DefaultMaxFailures, negative allows none.
	MaxFailures float64
	// MaxLatencyP99 bounds the measured p99 latency from the scheduled
	// time; it is required.
	MaxLatencyP99 time.Duration
}

func (c CapacityCriteria) withDefaults() CapacityCriteria {
	if c.MinThroughput == 0 {
		c.MinThroughput = DefaultMinThroughput
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = DefaultMaxFailures
	} else if c.MaxFailures < 0 {
		c.MaxFailures = 0
	}
	return c
}

func (c CapacityCriteria) validate() error {
	switch {
	case math.IsNaN(c.MinThroughput) || c.MinThroughput < 0 || c.MinThroughput > 1:
		return fmt.Errorf("minimum throughput %v must lie in [0, 1]", c.MinThroughput)
	case math.IsNaN(c.MaxFailures) || c.MaxFailures > 1:
		return fmt.Errorf("maximum failure share %v must be at most 1", c.MaxFailures)
	case c.MaxLatencyP99 <= 0:
		return fmt.Errorf("p99 latency bound %s must be positive", c.MaxLatencyP99)
	}
	return nil
}

// Sustained reports whether a trial's totals meet the criteria and, when
// they do not, every criterion they miss. Zero fields take their defaults.
func (c CapacityCriteria) Sustained(t OpenTotals) (bool, string) {
	c = c.withDefaults()
	if t.Measured == 0 {
		return false, "no measured results"
	}
	var miss []string
	offered := t.OfferedRate
	if offered <= 0 {
		offered = t.TargetRate
	}
	if offered > 0 && t.Throughput < c.MinThroughput*offered {
		miss = append(miss, fmt.Sprintf("throughput %.4g/s is %.1f%% of %.4g/s offered (need %.1f%%)",
			t.Throughput, 100*t.Throughput/offered, offered, 100*c.MinThroughput))
	}
	if share := float64(t.Failures) / float64(t.Measured); share > c.MaxFailures {
		miss = append(miss, fmt.Sprintf("%d of %d requests failed (%.2f%%, at most %.2f%%)",
			t.Failures, t.Measured, 100*share, 100*c.MaxFailures))
	}
	if p99 := t.LatencyP99(); c.MaxLatencyP99 > 0 && p99 > c.MaxLatencyP99 {
		miss = append(miss, fmt.Sprintf("p99 latency %s above %s", p99, c.MaxLatencyP99))
	}
	return len(miss) == 0, strings.Join(miss, "; ")
}

// CapacityOptions configures SearchCapacity.
type CapacityOptions struct {
	CapacityCriteria
	// StartRate is the first rate tried, in requests per second.
	StartRate float64
	// MaxRate, if positive, caps the rates tried.
	MaxRate float64
	// MaxTrials bounds the number of trials.
	MaxTrials int
	// Precision ends the search once the gap between the highest
	// sustained and the lowest unsustained rate is at most this share of
	// the latter; zero means DefaultPrecision.
	Precision float64
}

// CapacityTrial is one trial of a capacity search.
type CapacityTrial struct {
	Rate      float64    `json:"rate"`
	Totals    OpenTotals `json:"totals"`
	Sustained bool       `json:"sustained"`
	Reason    string     `json:"reason,omitempty"`
}

// Capacity is the outcome of a capacity search.
type Capacity struct {
	// Rate is the highest rate sustained; 0 when none was.
	Rate float64 `json:"rate"`
	// Ceiling is the lowest rate not sustained; 0 when every trial was
	// (the capacity is then at least Rate, e.g. MaxRate).
	Ceiling float64 `json:"ceiling"`
	// Converged is set when Rate and Ceiling are within the precision.
	Converged bool            `json:"converged"`
	Trials    []CapacityTrial `json:"trials"`
	// Warning collects the generator warnings of the trials: where the
	// generator lagged, latencies were taken from the schedule and stay
	// honest, but the target saw fewer requests than offered.
	Warning string `json:"warning,omitempty"`
}

// TrialFunc runs one short open-loop trial at rate and returns its totals,
// typically a RunOpenLoop call with Rate set to rate.
type TrialFunc func(ctx context.Context, rate float64) (OpenTotals, error)

// SearchCapacity finds the highest rate the target sustains: it doubles
// the rate from StartRate (up to MaxRate) until a trial is not sustained,
// then bisects between the highest sustained and the lowest unsustained
// rate until they are within Precision or MaxTrials trials have run. When
// the very first trial fails, the bisection starts from zero. A trial
// error stops the search and is returned with the trials so far.
func SearchCapacity(ctx context.Context, opts CapacityOptions, trial TrialFunc) (Capacity, error) {
	crit, prec, err := opts.settings(trial)
	if err != nil {
		return Capacity{}, err
	}

	var c Capacity
	var warnings []string
	rate := opts.StartRate
	for len(c.Trials) < opts.MaxTrials {
		if err := ctx.Err(); err != nil {
			return c, fmt.Errorf("capacity search stopped after %d trials: %w", len(c.Trials), err)
		}
		tot, err := trial(ctx, rate)
		if err != nil {
			return c, fmt.Errorf("capacity trial at %.4g requests/s: %w", rate, err)
		}
		ok, why := crit.Sustained(tot)
		c.Trials = append(c.Trials, CapacityTrial{Rate: rate, Totals: tot, Sustained: ok, Reason: why})
		if tot.Warning != "" {
			warnings = append(warnings, fmt.Sprintf("at %.4g requests/s: %s", rate, tot.Warning))
		}
		if ok {
			c.Rate = max(c.Rate, rate)
		} else if c.Ceiling == 0 || rate < c.Ceiling {
			c.Ceiling = rate
		}

		if c.Ceiling == 0 {
			// Doubling: nothing has failed yet.
			if opts.MaxRate > 0 && c.Rate >= opts.MaxRate {
				break
			}
			rate = 2 * c.Rate
			if opts.MaxRate > 0 {
				rate = min(rate, opts.MaxRate)
			}
			continue
		}
		if c.Rate > 0 && c.Ceiling-c.Rate <= prec*c.Ceiling {
			c.Converged = true
			break
		}
		rate = (c.Rate + c.Ceiling) / 2
	}
	c.Warning = strings.Join(warnings, "\n")
	return c, nil
}

// settings validates o, and trial, and returns the criteria and precision
// with their defaults filled in.
func (o CapacityOptions) settings(trial TrialFunc) (CapacityCriteria, float64, error) {
	crit := o.CapacityCriteria.withDefaults()
	prec := o.Precision
	if prec == 0 {
		prec = DefaultPrecision
	}
	switch {
	case trial == nil:
		return CapacityCriteria{}, 0, errors.New("capacity search: no trial function")
	case math.IsNaN(o.StartRate) || math.IsInf(o.StartRate, 0) || o.StartRate <= 0:
		return CapacityCriteria{}, 0, fmt.Errorf("capacity search: start rate %v must be positive and finite", o.StartRate)
	case math.IsNaN(o.MaxRate) || math.IsInf(o.MaxRate, 0) || o.MaxRate < 0:
		return CapacityCriteria{}, 0, fmt.Errorf("capacity search: maximum rate %v must not be negative", o.MaxRate)
	case o.MaxRate > 0 && o.MaxRate < o.StartRate:
		return CapacityCriteria{}, 0, fmt.Errorf("capacity search: maximum rate %v below start rate %v", o.MaxRate, o.StartRate)
	case o.MaxTrials < 1:
		return CapacityCriteria{}, 0, fmt.Errorf("capacity search: maximum trials %d must be at least 1", o.MaxTrials)
	case math.IsNaN(prec) || prec < 0 || prec >= 1:
		return CapacityCriteria{}, 0, fmt.Errorf("capacity search: precision %v must lie in (0, 1)", prec)
	}
	if err := crit.validate(); err != nil {
		return CapacityCriteria{}, 0, fmt.Errorf("capacity search: %w", err)
	}
	return crit, prec, nil
}
