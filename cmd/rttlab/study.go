package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/results"
	"github.com/spf13/cobra"

	// The studies register their kinds (results.Register) as they load.
	_ "github.com/rttlab/rttlab/placement"
	_ "github.com/rttlab/rttlab/rtt/report"
	_ "github.com/rttlab/rttlab/workers"
)

// The skeleton the study commands share (run, place, workers): how a
// study begins (its --resume folder opened first), how it ends (the
// digest and where the results are) and how a stopped one continues,
// each reaching the study through its registered kind.

// studyKind is the registered study of kind, which the study's own
// package registered (results.Register): this command imports them all.
func studyKind(kind string) results.StudyKind {
	k, ok := results.Lookup(kind)
	if !ok {
		panic(fmt.Sprintf("no study of kind %q is registered in this rttlab", kind))
	}
	return k
}

// studyOf is the study of kind's folders.
func studyOf(kind string) results.Study { return studyKind(kind).Study }

// studyOfFolder is the study that wrote dir, by its manifest's kind; a
// kind no study registered is refused by results.ReadHeader, in one
// line naming the kinds this rttlab knows.
func studyOfFolder(dir string) (results.Study, error) {
	kind, err := results.FolderKind(dir)
	if err != nil {
		return nil, err
	}
	return studyOf(kind), nil
}

// beginStudy is how place and workers begin: the folder --resume names
// opened through its study's Open (locked, its cut last lines trimmed),
// then the engine connected with the target's images for the platform pf
// settles, and the progress lines timed from here. end releases both.
func beginStudy(ctx context.Context, w io.Writer, kind, resume string, target apps.Target, pf *platformFlag) (lab *runLab, p engine.Platform, say func(string), start time.Time, end func(), err error) {
	closeFolder := func() {}
	if resume != "" {
		f, err := studyKind(kind).Open(resume)
		if err != nil {
			return nil, p, nil, start, nil, err
		}
		closeFolder = func() { f.Close() }
	}
	lab, p, err = openLab(ctx, []apps.Target{target}, w, pf)
	if err != nil {
		closeFolder()
		return nil, p, nil, start, nil, err
	}
	start = time.Now()
	say = func(s string) { fmt.Fprintf(w, "[%s] %s\n", time.Since(start).Round(time.Second), s) }
	return lab, p, say, start, func() { lab.close(); closeFolder() }, nil
}

// endStudy is how place and workers end: a study that stopped returns err
// with how to continue it; one that ended prints where its results are.
func endStudy(cmd *cobra.Command, kind, dir string, start time.Time, err error) error {
	st := studyOf(kind)
	if err != nil {
		return hintError{err, resumeHint(st, dir)}
	}
	printStudyEnd(cmd.OutOrStdout(), cmd.ErrOrStderr(), st, dir, start, true)
	return nil
}

// printStudyEnd prints where a study's results are: after a run that
// ended well, the study's digest (the RTT study's at most 25 lines, with
// the whole summary in summary.md); otherwise the folder and, where the
// study wrote one, the report.
func printStudyEnd(out, warn io.Writer, st results.Study, dir string, start time.Time, ok bool) {
	digested := false
	if ok {
		if d, err := st.Digest(dir); err == nil {
			fmt.Fprintf(out, "\n%s", d)
			digested = true
		} else {
			fmt.Fprintf(warn, "warning: no digest: %v\n", err)
		}
	}
	fmt.Fprintf(out, "results: %s (%.0fs)\n", dir, time.Since(start).Seconds())
	if rp := filepath.Join(dir, results.ReportPageFile); !digested && fileExists(rp) {
		fmt.Fprintf(out, "report:  %s\n", rp)
	}
}

// resumeHint is how to continue a study stopped before its end, asked of
// the study that wrote dir: how many of its tasks are done, and its
// command's --resume.
func resumeHint(st results.Study, dir string) string {
	cont := fmt.Sprintf("continue with: %s --resume %s", results.Writer(st.Kind()), dir)
	if done, total, err := results.Progress(st, dir); err == nil {
		return fmt.Sprintf("%d of %d tasks done, the results folder consistent; %s", done, total, cont)
	}
	return "the results folder is consistent; " + cont
}
