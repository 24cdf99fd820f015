package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// The RTT study's kind, as report, compare and --resume find it; its
// runner opens its own folder (raw.Open).
func init() {
	results.Register(results.StudyKind{Kind: results.KindRTT, Writer: "rttlab run", Study: Study{}})
}

// Study is the RTT study as the commands reach it (results.Study).
// Rendered, when set, is the folder's summary as the run just rendered
// it: the digest is printed from it rather than analyzed again.
type Study struct{ Rendered *Summary }

func (Study) Kind() string { return results.KindRTT }

// Report renders the folder again from its raw files (RenderFiles), the
// report last; a folder without a sample of a done task is refused with
// nothing written (the plots of an earlier report stay), and what the
// reader tolerated is said on warn as well as in the summary.
func (Study) Report(dir string, warn io.Writer) ([]string, error) {
	if d, err := raw.Load(dir); err == nil {
		if len(d.Samples) == 0 {
			return nil, fmt.Errorf("%s holds no sample of a done task (%d of %d tasks done): nothing to report, nothing written",
				filepath.Join(dir, raw.SamplesFile), len(d.Done), len(d.Manifest.Tasks))
		}
		for _, n := range d.Notes {
			fmt.Fprintf(warn, "warning: %s\n", n)
		}
	}
	return RenderFiles(dir, Options{})
}

// Sensitivity is the fit of each route's p50 against the RTT over every
// setting of the folder (Summary.Sensitivity), which --p50-target reads;
// none for a folder without a sample of a done task.
func (Study) Sensitivity(dir string) ([]Sensitivity, error) {
	d, err := raw.Load(dir)
	if err != nil || len(d.Samples) == 0 {
		return nil, err
	}
	return Analyze(d, Options{}).Sensitivity, nil
}

// Compare sets the common cells of two folders side by side (Compare).
func (Study) Compare(dirA, dirB string) (string, error) {
	c, err := Compare(dirA, dirB, Options{})
	if err != nil {
		return "", err
	}
	return string(c.Markdown()), nil
}

// Tasks is the manifest's tasks in its shuffled order, by number, each
// done when tasks.jsonl has an attempt of it done.
func (Study) Tasks(dir string) ([]results.TaskState, error) {
	d, err := raw.Load(dir)
	if err != nil {
		return nil, err
	}
	out := make([]results.TaskState, 0, len(d.Manifest.Tasks))
	for _, t := range d.Manifest.Tasks {
		out = append(out, results.TaskState{Name: strconv.Itoa(t.ID), Done: d.IsDone(t.ID)})
	}
	return out, nil
}

// Digest is the summary's digest (Summary.Digest): the rendered one, or
// the folder analyzed again under the default options.
func (s Study) Digest(dir string) (string, error) {
	sum := s.Rendered
	if sum == nil {
		d, err := raw.Load(dir)
		if err != nil {
			return "", err
		}
		sum = Analyze(d, Options{})
	}
	rp := filepath.Join(dir, ReportFile)
	if _, err := os.Stat(rp); err != nil {
		rp = ""
	}
	return sum.Digest(filepath.Join(dir, SummaryMDFile), rp), nil
}
