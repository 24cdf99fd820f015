package placement

import (
	"context"
	"math"
)

// LinkCalibration is one phase's link calibration: per round, each
// delayed pair's ICMP residual (configured − added, ms), and the one-way
// delays kept (those of the round with the smallest total |residual|).
type LinkCalibration struct {
	Phase  string               `json:"phase"`
	Rounds []map[string]float64 `json:"rounds"`
	Kept   int                  `json:"kept_round"`
	OneWay map[string]float64   `json:"one_way_ms"` // "a→db": ms applied
}

// linkCalRounds bounds the link calibration.
const linkCalRounds = 3

// calibrateLinks corrects the one-way delays so that each delayed pair's
// ICMP RTT, measured against zero right before it, adds what is configured:
// the residual is split over the directions as configured (half each way,
// or all on the one delayed direction), never below a zero hold.
// SELECT 1 is not used, so it stays an independent check. The best round's
// delays are applied when it returns. Directions in fixed are applied as
// given and their pairs are not calibrated.
func (r *Runner) calibrateLinks(ctx context.Context, phase string, want, fixed map[[2]string]float64) (map[[2]string]float64, error) {
	lc := LinkCalibration{Phase: phase}
	adj := map[[2]string]float64{}
	for k, v := range want {
		adj[k] = v
	}
	for k, v := range fixed {
		adj[k] = v
	}
	delayed := delayedPairs(want, fixed)
	if len(delayed) == 0 {
		return adj, r.Session.SetLinks(ctx, r.Runtime, adj)
	}
	best, bestErr := map[[2]string]float64{}, math.Inf(1)
	zeroLinks := map[[2]string]float64{}
	for k, v := range fixed {
		zeroLinks[k] = v // the fixed links stay as they are while the others are measured at zero
	}
	for round := 0; round < linkCalRounds; round++ {
		res, total, next, err := r.linkCalRound(ctx, delayed, want, adj, zeroLinks)
		if err != nil {
			return nil, err
		}
		lc.Rounds = append(lc.Rounds, res)
		if total < bestErr {
			bestErr, lc.Kept = total, round
			best = map[[2]string]float64{}
			for k, v := range adj {
				best[k] = v
			}
		}
		adj = next
	}
	lc.OneWay = map[string]float64{}
	for k, v := range best {
		lc.OneWay[k[0]+"→"+k[1]] = v
	}
	r.res.LinkCalibration = append(r.res.LinkCalibration, lc)
	return best, r.Session.SetLinks(ctx, r.Runtime, best)
}

// delayedPairs lists the node pairs to calibrate: those with a delay in
// want and neither direction in fixed.
func delayedPairs(want, fixed map[[2]string]float64) [][2]string {
	var delayed [][2]string
	for _, pr := range pairs() {
		_, fw := fixed[pr]
		_, bw := fixed[[2]string{pr[1], pr[0]}]
		if want[pr]+want[[2]string{pr[1], pr[0]}] > 0 && !fw && !bw {
			delayed = append(delayed, pr)
		}
	}
	return delayed
}

// linkCalRound is one calibration round: each delayed pair's ICMP RTT with
// only the fixed links applied (zeroLinks), then at adj; it returns each
// pair's residual (configured − added, by "a–b"), their total |residual|
// and the delays for the next round.
func (r *Runner) linkCalRound(ctx context.Context, delayed [][2]string, want, adj, zeroLinks map[[2]string]float64) (map[string]float64, float64, map[[2]string]float64, error) {
	if err := r.Session.SetLinks(ctx, r.Runtime, zeroLinks); err != nil {
		return nil, 0, nil, err
	}
	zero := map[[2]string]float64{}
	for _, pr := range delayed {
		m, _, err := r.Session.Ping(ctx, r.Runtime, pr[0], pr[1], r.Session.Plan.ICMPCount)
		if err != nil {
			return nil, 0, nil, err
		}
		zero[pr] = m
	}
	if err := r.Session.SetLinks(ctx, r.Runtime, adj); err != nil {
		return nil, 0, nil, err
	}
	res := map[string]float64{}
	total := 0.0
	next := map[[2]string]float64{}
	for k, v := range adj {
		next[k] = v
	}
	for _, pr := range delayed {
		m, _, err := r.Session.Ping(ctx, r.Runtime, pr[0], pr[1], r.Session.Plan.ICMPCount)
		if err != nil {
			return nil, 0, nil, err
		}
		back := [2]string{pr[1], pr[0]}
		resid := want[pr] + want[back] - (m - zero[pr])
		res[pr[0]+"–"+pr[1]] = resid
		total += math.Abs(resid)
		// Split the residual as the configuration splits the link: half
		// each way for a symmetric one, all on the delayed direction of
		// a one-way addition (the held-out change stays one-way).
		fwd := 0.5
		if tot := want[pr] + want[back]; tot > 0 && (want[pr] == 0 || want[back] == 0) {
			fwd = want[pr] / tot
		}
		next[pr] = math.Max(adj[pr]+resid*fwd, 0)
		next[back] = math.Max(adj[back]+resid*(1-fwd), 0)
	}
	return res, total, next, nil
}
