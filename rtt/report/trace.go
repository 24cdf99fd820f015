package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// TraceFile holds the per-request trace of each app's request types
// (written by the runner or `rttlab trace --results`); optional.
const TraceFile = "trace.json"

// ReadTrace reads DIR/trace.json; a folder without one has no trace.
func ReadTrace(dir string) ([]workloads.TraceRow, error) {
	p := filepath.Join(dir, TraceFile)
	b, err := capped.ReadFile(p, TraceFile, results.MaxFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []workloads.TraceRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", results.JSONErrPos(p, b, err), results.JSONWords(err))
	}
	return rows, nil
}

// WriteTrace replaces the rows of the apps in rows and writes the file
// atomically.
func WriteTrace(dir string, rows []workloads.TraceRow) error {
	old, err := ReadTrace(dir)
	if err != nil {
		return err
	}
	apps := map[string]bool{}
	for _, r := range rows {
		apps[r.App] = true
	}
	var all []workloads.TraceRow
	for _, r := range old {
		if !apps[r.App] {
			all = append(all, r)
		}
	}
	all = append(all, rows...)
	slices.SortFunc(all, func(a, b workloads.TraceRow) int {
		if c := strings.Compare(a.App, b.App); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteAtomic(dir, TraceFile, append(b, '\n'))
}

// traceMarkdown puts each app's traced round trips next to its measured
// amplification ratio.
func (s *Summary) traceMarkdown(b *strings.Builder) {
	if len(s.Trace) == 0 {
		return
	}
	b.WriteString("## Round trips per request (trace)\n\n")
	b.WriteString("Per request, traced one at a time without added delay: round trips = client→database bursts answered by the database, seen on the wire in the app's network namespace; statements = Query and Execute protocol messages; parses = Parse messages; pg_stat_statements = executions per request. Median [min-max].\n\n")
	var apps []string
	for _, r := range s.Trace {
		if !slices.Contains(apps, r.App) {
			apps = append(apps, r.App)
		}
	}
	for _, app := range apps {
		fmt.Fprintf(b, "### %s\n\n", mdEscape(app))
		b.WriteString("| type | share | n | round trips | statements | parses | pg_stat_statements | expected | failed |\n")
		b.WriteString("| --- | ---: | ---: | --- | --- | --- | ---: | ---: | ---: |\n")
		var wsum, wtrips float64
		for _, r := range s.Trace {
			if r.App != app {
				continue
			}
			share, exp := dash, dash
			if r.Weight > 0 {
				share = fmtFixed(r.Weight*100, 0) + "%"
				wsum += r.Weight
				wtrips += r.Weight * r.RoundTrips.Median
			}
			if r.Expected >= 0 {
				exp = fmtFixed(r.Expected, 0)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %d |\n", mdEscape(r.Type), share, r.N,
				traceRange(r.RoundTrips), traceRange(r.Statements), traceRange(r.Parses), PGSSText(r.PGSS), exp, r.Failures)
		}
		b.WriteString("\n")
		var ratios []string
		for _, c := range s.Cells {
			if c.App != app || !c.HasBaseline {
				continue
			}
			ratios = append(ratios, fmt.Sprintf("%s at %s ms: %s", mdEscape(c.Route), fmtSetting(c.RTTms), fmtFixed(c.Ratio, 1)))
		}
		if wsum > 0 {
			fmt.Fprintf(b, "Mix-weighted round trips per request: %s. ", fmtFixed(wtrips/wsum, 1))
		}
		if len(ratios) > 0 {
			fmt.Fprintf(b, "Measured amplification ratio (change ÷ RTT): %s.\n\n", strings.Join(ratios, "; "))
		} else {
			b.WriteString("No measured amplification ratio for this app in this folder.\n\n")
		}
	}
}

func traceRange(r workloads.TraceRange) string {
	return fmt.Sprintf("%s [%d-%d]", fmtFixed(r.Median, 1), r.Min, r.Max)
}

// HasTrace reports whether the folder's trace covers app.
func (d *Data) HasTrace(app string) bool {
	for _, r := range d.Trace {
		if r.App == app {
			return true
		}
	}
	return false
}

// PGSSText prints pg_stat_statements executions per request: n/a where the
// database could not count them.
func PGSSText(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmtFixed(v, 2)
}
