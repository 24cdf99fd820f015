package placement

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rttlab/rttlab/results"
)

// The placement study's kind, as report, compare and --resume find it.
func init() {
	results.Register(results.StudyKind{Kind: results.KindPlacement, Writer: "rttlab place", Study: Study{}, Open: OpenFolder})
}

// Study is the placement study as the commands reach it (results.Study).
type Study struct{}

func (Study) Kind() string { return results.KindPlacement }

// Report recomputes the folder's summaries from its samples
// (ReportPlacement); a folder whose baseline is not done is refused.
func (Study) Report(dir string, _ io.Writer) ([]string, error) {
	if done, total, err := results.Progress(Study{}, dir); err == nil && done == 0 {
		return nil, fmt.Errorf("%s: none of its %d tasks is done: nothing to report, nothing written", dir, total)
	}
	return ReportPlacement(dir)
}

func (Study) Compare(dirA, dirB string) (string, error) { return ComparePlacement(dirA, dirB) }

// Digest is the folder's summary.md, whole.
func (Study) Digest(dir string) (string, error) { return results.ReadSummaryMD(dir) }

// Tasks is the folder's plan's tasks, each done when the journal has it
// done; a folder the study finished before it kept a journal (none, and a
// summary.json) has every task done.
func (Study) Tasks(dir string) ([]results.TaskState, error) {
	p, err := FolderPlan(dir)
	if err != nil {
		return nil, err
	}
	j, err := results.ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	finished := false
	if j.Empty() {
		_, serr := os.Stat(filepath.Join(dir, results.SummaryJSONFile))
		finished = serr == nil
	}
	var out []results.TaskState
	for _, t := range p.Tasks() {
		_, done := j.Done(t)
		out = append(out, results.TaskState{Name: t, Done: done || finished})
	}
	return out, nil
}
