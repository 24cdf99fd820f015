// Package workloads holds the load drivers that run inside rttlab's client
// and agent containers: the closed-loop HTTP load client with its JSON-lines
// result stream, the open-loop generator (Poisson arrivals, latency from
// the scheduled send time, a capacity search on top), seeded weighted
// request mixes (Redmine, Aimeos), the SELECT 1 round-trip probe, and the
// kernel-stamped packet capture whose captures MatchOneWay pairs into
// one-way delays. The cobra wiring lives in cmd/rttlab; this package only
// holds the logic and its option structs.
package workloads
