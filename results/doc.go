// Package results is what every study's results folder is, whichever
// study writes it:
//
//   - its kind and format (kind.go): the manifest's "kind" (rtt, placement,
//     workers; none reads as rtt) and "format" (none reads as 1). A folder
//     of a newer format is read by nothing here, and a --resume of a folder
//     another study wrote is refused in one line naming the command that
//     continues it (CheckResume);
//   - one way to make and reopen a folder (folder.go): Create names every
//     study's folder <UTC time>Z-<plan> and takes its lock before it
//     writes anything, the manifest is written whole with its header
//     (WriteManifest), Open reopens a folder to resume it and trims each
//     raw file of the cut last line a crash leaves, and every raw file is
//     appended to through one synced append (AppendSynced): JSON lines
//     (AppendLines) and CSV rows (AppendRows); a summary is replaced whole
//     (WriteAtomic);
//   - one writer (lock.go): an exclusive flock on the folder's .lock with the
//     holder's pid inside; a second writer, in any process, gets a
//     *LockedError naming it; the kernel drops the lock when its holder dies;
//   - synced writes and JSON lines (files.go, lines.go): appends fsynced
//     before they return, one reader that numbers lines and leaves out the
//     cut last line of an interrupted write, which the writer trims
//     (TrimCutLine) before it appends again;
//   - the skeleton every study runs by (tasks.go): a study lists its
//     plan's tasks and runs one attempt of one (TaskRunner); RunTasks
//     goes through the tasks the folder has not done and RunAttempts
//     records each attempt started, done or failed where the study keeps
//     them (Attempts; the RTT study keeps a started attempt in memory, its
//     lines carrying its number) and retries a failed one as the study
//     says (Retry, on a fresh stack), so that a resume continues after
//     the last done task and counts no task twice;
//   - the journal of task attempts (journal.go, attempts.jsonl), where
//     the placement and worker studies keep them: each attempt recorded
//     started, done (with the state the later tasks start from) or failed
//     (with its reason). The RTT study's tasks.jsonl (written by rtt, read by rtt/report) predates
//     it and keys tasks by number;
//   - what the commands know of a study (study.go, Study): its kind, its
//     folder's tasks and which are done, report, compare and digest; and
//     the registry of study kinds (registry.go) that each study fills
//     from its own package (Register) and the commands look up by a
//     folder's kind (Lookup), with the command that writes it and how it
//     reopens for --resume.
//
// The statistics every study uses are results/stats, the plot kit
// results/plotkit; each study's own files, analysis and renderings are the
// study's (rtt/report, placement, workers).
package results
