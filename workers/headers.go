package workers

import "github.com/rttlab/rttlab/internal/proxyserve"

// Headers the proxy reads and writes.
const (
	// HeaderPolicy on a request chooses its rule ("jsq" or "proxy:jsq",
	// …; else the config's); on the response it names the policy
	// applied, e.g. "proxy:jsq".
	HeaderPolicy = "X-Rttlab-Policy"
	// HeaderWorker on the response names the upstream the proxy chose.
	HeaderWorker = "X-Rttlab-Worker"
	// HeaderRequestID on a request is copied into its decision line.
	HeaderRequestID = proxyserve.HeaderRequestID
	// QueryPolicy, a query parameter, chooses the rule like HeaderPolicy
	// (the header wins) for load clients that only send paths; the proxy
	// removes it before forwarding.
	QueryPolicy = "rttlab_policy"
)

// Response headers the /work route sets, so that each request says where
// and when it ran. The times are nanoseconds of one clock shared by every
// worker of a run (Process.clock_gettime(Process::CLOCK_MONOTONIC,
// :nanosecond) on one host), stamped by a Rack middleware at the top of
// the stack: start before calling the app, end when it returned.
const (
	HeaderPID     = "X-Rttlab-Pid"
	HeaderThread  = "X-Rttlab-Thread"
	HeaderStartNS = "X-Rttlab-Start-Ns"
	HeaderEndNS   = "X-Rttlab-End-Ns"
)

// WorkerHeaders are the response headers a run copies into its results
// (workloads.OpenLoopOptions.CopyHeaders): the worker's PID, thread and
// times, and the proxy's chosen upstream.
func WorkerHeaders() []string {
	return []string{HeaderPID, HeaderThread, HeaderStartNS, HeaderEndNS, HeaderWorker}
}
