package workers

import (
	"fmt"
	"io"

	"github.com/rttlab/rttlab/results"
)

// The worker study's kind, as report, compare and --resume find it.
func init() {
	results.Register(results.StudyKind{Kind: results.KindWorkers, Writer: "rttlab workers", Study: Study{}, Open: OpenFolder})
}

// Study is the worker study as the commands reach it (results.Study).
type Study struct{}

func (Study) Kind() string { return results.KindWorkers }

// Report derives the folder's summary and plots under its own plan
// (ReportWorkers).
func (Study) Report(dir string, _ io.Writer) ([]string, error) {
	plan, err := FolderPlan(dir)
	if err != nil {
		return nil, err
	}
	return ReportWorkers(dir, plan)
}

// Compare: the worker study has none.
func (Study) Compare(dirA, dirB string) (string, error) {
	return "", &results.NoCompareError{Msg: fmt.Sprintf("%s and %s are worker studies' folders: compare takes two folders of rttlab run or of rttlab place; read each worker study's summary.md", dirA, dirB)}
}

// Digest is the folder's summary.md, whole.
func (Study) Digest(dir string) (string, error) { return results.ReadSummaryMD(dir) }

// Tasks is the folder's plan's tasks (Plan.index), each done when the
// folder holds its capacity or run.
func (Study) Tasks(dir string) ([]results.TaskState, error) {
	plan, err := FolderPlan(dir)
	if err != nil {
		return nil, err
	}
	f, err := readWorkersFolder(dir)
	if err != nil {
		return nil, err
	}
	ix := plan.index()
	var out []results.TaskState
	for _, t := range ix.names {
		out = append(out, results.TaskState{Name: t, Done: f.has(ix, t)})
	}
	return out, nil
}
