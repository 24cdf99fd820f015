package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Study is what the commands know of one kind of results folder: report,
// compare, the resume hint and the end-of-run digest reach a study through
// it, by the folder's kind, never by a switch of their own. Its runner is
// the study's TaskRunner. Each study's package implements it
// (rtt/report, placement, workers) and registers it with its kind
// (Register, in its study.go); no shared package imports a study, the
// command imports them all.
type Study interface {
	// Kind is the manifest's kind of the study's folders.
	Kind() string
	// Report derives the folder's summaries and plots again from its raw
	// files alone and returns the files it wrote; what the reader
	// tolerated (a line cut by a crash) is said on warn. Nothing is
	// written from a folder without a done task.
	Report(dir string, warn io.Writer) ([]string, error)
	// Compare sets two of the study's folders side by side (markdown);
	// ErrNoCompare when the study has no comparison.
	Compare(dirA, dirB string) (string, error)
	// Tasks reads the plan the folder was run with and lists its tasks in
	// the order they run, each with whether the folder has it done (the
	// names its TaskRunner runs them by).
	Tasks(dir string) ([]TaskState, error)
	// Digest is what the end of a run that went well prints from the
	// folder's summary, with the paths of the whole summary and report.
	Digest(dir string) (string, error)
}

// TaskState is a task of a folder's plan and whether the folder has it
// done.
type TaskState struct {
	Name string
	Done bool
}

// Progress says how many of dir's tasks are done, of how many, from
// st.Tasks.
func Progress(st Study, dir string) (done, total int, err error) {
	tasks, err := st.Tasks(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range tasks {
		if t.Done {
			done++
		}
	}
	return done, len(tasks), nil
}

// SummaryMDFile is every study's summary in markdown, in its folder.
const SummaryMDFile = "summary.md"

// ReportPageFile is the page a study that renders one writes in its
// folder, to open in a browser; the report command names it last.
const ReportPageFile = "report.html"

// ReadSummaryMD is dir's summary.md: the digest of a study whose summary
// is short enough to print whole.
func ReadSummaryMD(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, SummaryMDFile))
	if err != nil {
		return "", fmt.Errorf("the study's summary: %w", err)
	}
	return string(b), nil
}

// ErrNoCompare is what a study's Compare matches (errors.Is) when the
// study has none.
var ErrNoCompare = errors.New("no comparison of two folders")

// NoCompareError is a study's Compare when it has none; its message says
// what to read instead.
type NoCompareError struct{ Msg string }

func (e *NoCompareError) Error() string        { return e.Msg }
func (e *NoCompareError) Is(target error) bool { return target == ErrNoCompare }
