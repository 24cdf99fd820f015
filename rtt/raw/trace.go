package raw

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
	return results.WriteJSON(dir, TraceFile, all)
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
