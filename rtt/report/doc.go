// Package report reads and renders the RTT study's results folder: its
// file format, its reader (Load), its analysis (the statistics of every cell, the wire's verdict, where each
// change went) and its renderings (summary, report.html, plots, compare,
// the round-trip budget gate). What every study's folder shares (kind,
// format, lock, JSON lines, the attempts journal) is package results;
// the writer of the raw files is the runner's (rtt.Folder, in package rtt).
//
// # Folder
//
// A study writes to <out>/<UTC time>-<plan>/, for example
// rttlab-results/20261129T235900Z-study/:
//
//	manifest.json  Manifest: kind, format, plan, seed, shuffled task order, versions, host, shaper, ...
//	samples.jsonl  one Sample per request (warmup and measured), appended per task attempt
//	tasks.jsonl    one TaskRecord per finished attempt: "done" or "failed"
//	probes.csv     Probe rows: ICMP and SELECT 1 checks of the injected delay
//	shaper.csv     what each shaper did in each task: packets, drops, realized hold
//	wire.csv       each task's one-way delays on the wire, from the paired captures
//	anatomy.jsonl  each request taken apart on the wire: client, wire, app, database
//	trace.json     the round-trip trace of one request per route (rttlab trace)
//	runs.csv       derived: per run n, p50, p90, p99, mean, failures
//	summary.json   derived: every cell with CI, change, ratio, predicted, warnings
//	summary.md     derived: study-style lines, a table per app, probes, warnings
//	plots/         derived: latency, change, ratio, verification, runs (.svg and .png)
//	report.html    derived: one self-contained page (inline CSS and SVG, no address)
//
// The first eight are raw data; Render derives the rest from them alone,
// so `rttlab report DIR` can always regenerate them, byte for byte. It
// computes everything before it writes anything, so a broken raw file
// (the error names file and line) leaves the earlier report in place.
//
// # Compare
//
// Compare(dirA, dirB, opts) sets the common cells of two studies with the
// same settings side by side: p50 and change of each, and the difference
// of the changes B - A with a percentile-bootstrap CI that resamples A's
// and B's baseline and target runs independently (stats.BootstrapDiffChangeCI,
// seeded with stats.NewRNG(A's seed, CompareKey(..., B's seed))).
// Comparison.Markdown renders it.
//
// # Writer
//
// The runner writes the raw files through rtt.Folder, a results.Folder
// (created with results.Create, resumed with results.Open):
//
//	f, err := rtt.CreateFolder(out, plan.Name, time.Now()) // or rtt.OpenFolder(dir) to resume
//	err = f.WriteManifest(&m)                              // before the first task, with m.Tasks
//	for each task t not done (f.State().Pending() on resume):
//	    a := 1                                             // on resume: f.State().NextAttempt(t.ID)
//	    err = f.AppendProbes(quickICMP)                    // optional, any time
//	    err = f.AppendSamples(t.ID, a, samples)            // fsynced
//	    err = f.MarkDone(t.ID, a)                          // only after AppendSamples returned nil
//	    // or f.MarkFailed(t.ID, a, reason), then retry with a+1
//	m.End = time.Now(); err = f.WriteManifest(&m)
//	err = f.Close()
//	err = report.Render(f.Dir())
//
// A task counts only once an attempt of it is marked done, and only that
// attempt's samples count, so a task redone after a crash never duplicates
// samples. A redo must use a new attempt number (Data.NextAttempt). Load
// leaves out the unterminated last line a crash mid-write leaves, which
// rtt.OpenFolder trims; any other malformed line is an error with file
// and line number.
//
// rtt.CreateFolder and rtt.OpenFolder take an exclusive flock on the
// folder's .lock file (with the holder's pid inside) and hold it until
// Close: a second writer of the folder, in any process, is refused with a
// *results.LockedError (results.ErrLocked). The kernel drops the lock
// when its holder dies, so a leftover .lock blocks nothing. Load and
// Render take no lock.
//
// # Statistics
//
// Per run: p50, p90, p99 and mean over the measured (non-warmup),
// successful requests (status 200, no transport error); failures are
// counted. Percentiles interpolate linearly between closest ranks (see
// stats.Percentile). Per cell (app, route, setting): p50 = median of the
// run-level p50s; 95% CI by percentile bootstrap over the run-level p50s
// (10,000 resamples); change against the 0 ms cell of the same app and
// route = difference of the medians, with a CI that resamples baseline and
// target runs independently; ratio = change ÷ setting; predicted =
// statements per request (Manifest.Statements) × setting. Each interval
// has its own PCG generator seeded from SHA-256 of (plan seed, cell key),
// so adding an app or setting leaves every other interval unchanged. Cells
// with fewer than 6 runs, or with more than 1% failed measured requests
// (in the cell or its 0 ms baseline), are shown with a warning instead of
// a claim. Requests the load client's HTTP client re-sent (Sample.Retried)
// are timed as they were and counted per cell.
// Probes: ICMP added RTT and SELECT 1 change against 0 ms (with a bootstrap
// CI over the run medians), flagged when they differ from the setting by
// more than DefaultToleranceMs (0.03 ms).
package report
