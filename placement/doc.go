// Package placement holds the logic of the placement study: the
// calibration data, the two cost models of the placement write-up
// ("Placing Compute Along the Database Request Path"), their predicted
// crossovers, the measured crossover of a serial-call sweep, the routing
// policies, the routing reverse proxy with its decision log, and the
// summaries of the routed comparison; and the study's plan (plan.go), its
// runner (runner.go, session.go: its nodes as a stack of orchestrator/stack,
// link calibration, the proxy served in the client node, the sweep and the
// concurrency phase), its report, markdown and plots. The models, policies
// and proxy start no containers; only the runner uses the engine, through
// orchestrator/stack and orchestrator/shaping, which import nothing of
// this package.
//
// # Models
//
// All times are in milliseconds; N is the number of serial (dependent)
// database statements of one request.
//
//	residual(h, r)     = routeP50(h, r) − healthP50(h) − N_cal(r) × select1P50(h)
//	networkOnly(h, r)  = clientPath(h) + N × select1P50(h)
//	profiled(h, r)     = clientPath(h) + residual(h, r) + N × select1P50(h)
//
// These are the write-up's formulas ("Prototype and cost model": network-only
// = user_to_compute_RTT + sequential_query_count × SQL_round_trip_time;
// profiled = user_request_path + host_route_residual + sequential_query_count
// × SQL_round_trip_time; the residual is "the direct route median minus the
// health request median and the sequential query count multiplied by the
// SELECT 1 median"). The SQL round-trip time of a host is its SELECT 1 p50.
//
// The client path of a host is the p50 of a /health request from the client
// to that host, not the TCP connect time. The write-up's sweep section says
// so ("the network model used the measured /health path plus N times the
// per-query database time. The profiled model used the measured zero-query
// route plus N times the per-query database time"), and its held-out table
// only works that way: the residual is defined against the health p50, so a
// connect-time client path would leave the app's own request overhead out of
// every estimate (about 0.65 ms on Compute A there, against the reported
// errors of 0.08 to 0.33 ms). The connect p50 is recorded in the calibration
// but used by no model. HostCalibration.ClientPathMs overrides the client
// path, for the held-out phase (the /health p50 measured after the
// client-path change) or a configured estimate; zero means the calibration's
// /health p50.
//
// For a route whose N comes from the request (the /serial?n=N route) the
// residual is that of the route as calibrated (the write-up calibrates it at
// n = 0, "the measured zero-query route"), and the estimate uses the
// request's N.
//
// # Policies
//
// user-first scores the client path; network-only and profiled score their
// model; queue-aware scores the profiled estimate plus the host's requests
// in flight × its service time. The lowest score wins; scores within
// TieMs of the lowest are ties, and ties go to the host listed first in the
// calibration.
package placement
