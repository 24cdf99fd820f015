// Package report analyzes and renders the RTT study's results folder:
// the statistics of every cell, the wire's verdict, where each change
// went, and the renderings (summary, report.html, plots, compare, the
// round-trip budget gate). It reads the raw files through package
// rtt/raw, which holds their format (records, file names, CSV headers,
// checks), their reader (raw.Load) and their writer (raw.Folder, which
// the runner appends to). What every study's folder shares (kind, format,
// lock, JSON lines, the attempts journal) is package results.
//
// # Folder
//
// A study writes to <out>/<UTC time>-<plan>/, for example
// rttlab-results/20261129T235900Z-study/:
//
//	manifest.json  raw.Manifest: kind, format, plan, seed, shuffled task order, versions, host, shaper, ...
//	samples.jsonl  one raw.Sample per request (warmup and measured), appended per task attempt
//	tasks.jsonl    one raw.TaskRecord per finished attempt: "done" or "failed"
//	probes.csv     raw.Probe rows: ICMP and SELECT 1 checks of the injected delay
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
// The runner writes the raw files through raw.Folder (raw.Create for a
// new study, raw.Open to resume one), the one writer of the format, which
// this package's tests use too; package rtt/raw describes the sequence of
// calls, the attempts that make a redone task count once, and the lock
// that keeps a second writer out. raw.Load and Render take no lock.
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
// statements per request (raw.Manifest.Statements) × setting. Each interval
// has its own PCG generator seeded from SHA-256 of (plan seed, cell key),
// so adding an app or setting leaves every other interval unchanged. Cells
// with fewer than 6 runs, or with more than 1% failed measured requests
// (in the cell or its 0 ms baseline), are shown with a warning instead of
// a claim. Requests the load client's HTTP client re-sent (raw.Sample.Retried)
// are timed as they were and counted per cell.
// Probes: ICMP added RTT and SELECT 1 change against 0 ms (with a bootstrap
// CI over the run medians), flagged when they differ from the setting by
// more than DefaultToleranceMs (0.03 ms).
package report
