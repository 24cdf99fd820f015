package netem

import (
	"strings"
	"testing"
	"time"
)

func TestParseDelay(t *testing.T) {
	good := map[string]time.Duration{
		"0":         0,
		"0ms":       0,
		"0.5ms":     500 * time.Microsecond,
		"250us":     250 * time.Microsecond,
		"250µs":     250 * time.Microsecond,
		"250μs":     250 * time.Microsecond,
		"1s":        time.Second,
		"1000ms":    time.Second,
		"0.05ms":    50 * time.Microsecond,
		"1500ns":    2 * time.Microsecond, // rounded to 1µs
		"1.4us":     time.Microsecond,
		" 0.1ms ":   100 * time.Microsecond,
		"1e-3s":     time.Millisecond,
		"0.000001s": time.Microsecond,
		"5":         5 * time.Millisecond, // a bare number is milliseconds
		"0.5":       500 * time.Microsecond,
	}
	for in, want := range good {
		got, err := ParseDelay(in)
		if err != nil || got != want {
			t.Errorf("ParseDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":       "empty",
		"5000":   "maximum",
		"-1ms":   "negative",
		"-0.5":   "negative",
		"NaN":    "finite",
		"nanms":  "finite",
		"Infms":  "finite",
		"+Infs":  "finite",
		"1.1s":   "maximum",
		"2000ms": "maximum",
		"0.1us":  "granularity",
		"400ns":  "granularity",
		"ms":     "not a number",
		"1m":     "unknown unit",
		"abcms":  "not a number",
		"1h":     "unknown unit",
		"0x10ms": "not a number",
	}
	for in, want := range bad {
		_, err := ParseDelay(in)
		if err == nil {
			t.Errorf("ParseDelay(%q) accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseDelay(%q) error %q, want one line mentioning %q", in, err, want)
		}
	}
}

func TestSplitRTT(t *testing.T) {
	for _, rtt := range []time.Duration{0, 1, 3, 25 * time.Microsecond, 100 * time.Microsecond, 750 * time.Microsecond, time.Millisecond, 1001 * time.Microsecond} {
		app, db := SplitRTT(rtt)
		if app+db != rtt || app < 0 || db < 0 || db-app > Granularity || db < app {
			t.Errorf("SplitRTT(%d) = %d, %d", rtt, app, db)
		}
		// Each half survives the 1µs rounding of a set request unchanged.
		for _, half := range []time.Duration{app, db} {
			if rtt%Granularity == 0 && half%Granularity != 0 {
				t.Errorf("SplitRTT(%v): half %v is not a whole microsecond", rtt, half)
			}
		}
	}
	if app, db := SplitRTT(25 * time.Microsecond); app != 12*time.Microsecond || db != 13*time.Microsecond {
		t.Errorf("SplitRTT(25µs) = %v, %v; want 12µs + 13µs", app, db)
	}
	if app, db := SplitRTT(time.Millisecond); app != 500*time.Microsecond || db != 500*time.Microsecond {
		t.Errorf("SplitRTT(1ms) = %v, %v", app, db)
	}
}

func TestValidateDelay(t *testing.T) {
	if err := ValidateDelay(-1); err == nil {
		t.Error("negative accepted")
	}
	if err := ValidateDelay(MaxDelay + 1); err == nil {
		t.Error("above max accepted")
	}
	if err := ValidateDelay(MaxDelay); err != nil {
		t.Error(err)
	}
}
