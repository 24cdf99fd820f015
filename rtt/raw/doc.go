// Package raw is the RTT study's raw results: the files a run writes into
// its results folder and everything else is derived from. It holds their
// format (the records Manifest, Task, Sample, TaskRecord, Probe,
// ShaperRow, WireRow and AnatomyRow, the file names, the CSV headers with
// each row's record and parse functions, and the checks every record
// satisfies), their reader (Load, into Data) and their writer (Folder).
// The runner (package rtt) writes through Folder, and rtt/report reads
// through Load to analyze and render; raw imports neither. What every
// study's folder shares (kind, format, lock, JSON lines, the attempts
// journal) is package results.
//
// # Files
//
//	manifest.json  Manifest: kind, format, plan, seed, shuffled task order, versions, host, shaper, ...
//	samples.jsonl  one Sample per request (warmup and measured), appended per task attempt
//	tasks.jsonl    one TaskRecord per finished attempt: "done" or "failed"
//	probes.csv     Probe rows (ProbeHeader): ICMP and SELECT 1 checks of the injected delay
//	shaper.csv     ShaperRow rows (ShaperHeader): what each shaper did in each task
//	wire.csv       WireRow rows (WireHeader): each task's one-way delays on the wire
//	anatomy.jsonl  one AnatomyRow per measured request, taken apart on the wire
//	trace.json     the round-trip trace of one request per route (WriteTrace)
//
// # Writer
//
// The runner writes the raw files through Folder, a results.Folder
// (created with results.Create, resumed with results.Open):
//
//	f, err := raw.Create(out, plan.Name, time.Now())  // or raw.Open(dir) to resume
//	err = f.WriteManifest(&m)                         // before the first task, with m.Tasks
//	for each task t not done (f.State().Pending() on resume):
//	    a := 1                                        // on resume: f.State().NextAttempt(t.ID)
//	    err = f.AppendProbes(quickICMP)               // optional, any time
//	    err = f.AppendSamples(t.ID, a, samples)       // fsynced
//	    err = f.MarkDone(t.ID, a)                     // only after AppendSamples returned nil
//	    // or f.MarkFailed(t.ID, a, reason), then retry with a+1
//	m.End = time.Now(); err = f.WriteManifest(&m)
//	err = f.Close()
//	err = report.Render(f.Dir())
//
// A task counts only once an attempt of it is marked done, and only that
// attempt's samples count, so a task redone after a crash never duplicates
// samples. A redo must use a new attempt number (Data.NextAttempt). Load
// leaves out the unterminated last line a crash mid-write leaves, which
// Open trims; any other malformed line is an error with file and line
// number.
//
// Create and Open take an exclusive flock on the folder's .lock file
// (with the holder's pid inside) and hold it until Close: a second writer
// of the folder, in any process, is refused with a *results.LockedError
// (results.ErrLocked). The kernel drops the lock when its holder dies, so
// a leftover .lock blocks nothing. Load and rtt/report's Render take no
// lock.
package raw
