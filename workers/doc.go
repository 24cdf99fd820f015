// Package workers holds the logic of the worker-scheduling study (rttlab
// workers): how Puma assigns concurrent requests to W workers ×
// T threads, against least-busy assignment, under open-loop load and
// database RTT. The seed (the worker-scheduling proposal, the second of
// the project's seed write-ups; not in this repository) says Puma lets
// any free thread of any worker accept the next connection, so two
// concurrent requests can share one worker's GVL while another worker
// idles, that this costs
// "around 20%" against ideal scheduling, and that the cost fades near
// saturation. The package holds the plan, the runner (runner.go: its
// nodes as a stack of orchestrator/stack with their agents from
// orchestrator/shaping, the open-loop load, the decision logs), the front
// proxy of the "ideal scheduling" policies, the analysis, the summary and
// the plots. Only the runner uses the engine, through those two packages,
// which import nothing of this package.
//
// # Policies
//
//	puma:wflbw=0        Puma cluster mode, wait_for_less_busy_worker 0:
//	                    the plain accept race (the baseline of every change)
//	puma:wflbw=default  cluster mode with Puma's default wait (0.005 s)
//	puma:wflbw=0.05     cluster mode with a larger wait
//	proxy:jsq           W single-mode Pumas behind this package's proxy,
//	                    join the shortest queue
//	proxy:round-robin   the same stack, load-blind turns
//	proxy:p2c           the same stack, power of two choices
//
// proxy:round-robin pays the proxy's hop like proxy:jsq, so the two
// separate the proxy's cost from the policy's effect; with two workers
// p2c always draws both and chooses exactly as jsq does.
//
// # Free worker
//
// A worker is idle ("free" in the seed's sense) when it has no request in
// progress; a worker with T threads and fewer than T requests has spare
// threads but is busy: its requests share its GVL. JSQ chooses the fewest
// requests in flight, which is an idle worker whenever there is one;
// threads do not enter the choice. The proxy counts a request in flight
// from its decision until the response has been copied to the client.
// JSQ ties go to a uniformly random tied worker from a seeded generator
// (or, with ties "first", to the first listed); see Chooser.
//
// # Collision
//
// A measured request collides when it started on a worker already running
// another request while some other worker had no request in progress at
// that instant, from the workers' own start and end stamps (see
// Collisions for ties and the optional slack). Warmup requests occupy
// workers but are not counted. The collision rate of a cell is the sum of
// its runs' collisions over the sum of their timed requests.
//
// # Intervals
//
// Requests within a run are not independent (a queue couples
// neighbours), so the unit of replication is the run: each run gives a
// p50, p90 and p99 of its successful measured requests (latency from the
// scheduled send time), a cell's figure is the median of its runs'
// values, and its 95% interval is the percentile bootstrap of that median
// over runs (stats.BootstrapMedianCI). A change against the accept race
// is the difference of the two medians with stats.BootstrapChangeCI
// (both cells resampled independently), and the relative change the
// ratio of the medians minus one with the same resampling. The
// collision-rate interval resamples runs. Every generator is
// stats.NewRNG(seed, key) with a key per figure. A cell with fewer than
// 6 runs, more than 1% failed requests or no successful request makes no
// claim; its numbers are shown with a warning.
//
// # Penalty
//
// PenaltyStatement compares the accept race with proxy:jsq on the p50 in
// every (configuration, mix, RTT, load), keeps those whose difference
// interval lies above 0, and reports the largest relative penalty with
// its interval, whether that interval holds 20%, whether the penalty at
// the highest load of the same configuration, mix and RTT is smaller (an
// interval of the difference of penalties), and how it changes with the
// RTT.
package workers
