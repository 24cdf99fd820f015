package raw

import (
	"slices"
	"strings"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// TraceFile holds the per-request trace of each app's request types
// (written by the runner or `rttlab trace --results`); optional.
const TraceFile = "trace.json"

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
	return results.WriteJSON(dir, TraceFile, all)
}
