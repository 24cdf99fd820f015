package workers

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Ties says how JSQ breaks a tie between workers with equally few
// requests in flight.
type Ties string

const (
	// TiesRandom picks uniformly among the tied workers with the
	// chooser's seeded generator (the default): at low load, when most
	// choices are between idle workers, the shares stay even, as they
	// would under a central queue, and no worker is favoured by its place
	// in the list.
	TiesRandom Ties = "random"
	// TiesFirst picks the tied worker listed first: deterministic, for
	// tests and for comparing against a fixed order.
	TiesFirst Ties = "first"
)

// ParseTies accepts "random", "first" or "" (random).
func ParseTies(s string) (Ties, error) {
	switch t := Ties(strings.ToLower(strings.TrimSpace(s))); t {
	case "", TiesRandom:
		return TiesRandom, nil
	case TiesFirst:
		return TiesFirst, nil
	}
	return "", fmt.Errorf("unknown ties %q (want random or first)", s)
}

// chooserStream is the PCG stream of a chooser's generator; the seed is
// the PCG state seed.
const chooserStream = 0x7274746c61622d77 // "rttlab-w"

// Chooser applies the proxy's rules to the workers' requests in flight.
// It is not safe for concurrent use: the proxy calls it under its lock.
type Chooser struct {
	ties Ties
	rng  *rand.Rand
	next int // round robin: the index the next request gets
}

// NewChooser returns a chooser whose random choices (JSQ's random ties and
// P2C's draws) come from a PCG generator seeded with seed.
func NewChooser(seed uint64, ties Ties) *Chooser {
	if ties == "" {
		ties = TiesRandom
	}
	return &Chooser{ties: ties, rng: rand.New(rand.NewPCG(seed, chooserStream))}
}

// Choose returns the index of the worker for the next request, given
// every worker's requests in flight (the request being placed not
// counted); inFlight must not be empty.
//
//   - jsq: the worker with the fewest in flight. A worker with none in
//     flight is idle, so an idle worker is always chosen while there is
//     one ("free workers first"); otherwise the least busy. Threads do
//     not enter: a worker with T threads and k < T in flight has spare
//     threads, but its running requests share the GVL with the new one,
//     so an idle worker still beats it, and among busy workers fewer in
//     flight is better whatever T is. Ties follow the chooser's Ties.
//   - round-robin: index 0, 1, …, W−1, 0, … regardless of load.
//   - p2c: two distinct workers drawn uniformly; the one with fewer in
//     flight wins, a tie goes to the first drawn (TiesRandom) or to the
//     lower index (TiesFirst). With two workers both are always drawn,
//     so p2c chooses exactly as jsq does; it differs from W = 3 on.
func (c *Chooser) Choose(rule Rule, inFlight []int) (int, error) {
	n := len(inFlight)
	if n == 0 {
		return 0, fmt.Errorf("%s: no workers", rule)
	}
	switch rule {
	case RuleJSQ:
		best, ties := 0, 1
		for i := 1; i < n; i++ {
			switch {
			case inFlight[i] < inFlight[best]:
				best, ties = i, 1
			case inFlight[i] == inFlight[best]:
				ties++
				// Reservoir sampling: the k-th tie replaces the choice
				// with probability 1/k, so each tie wins 1/ties.
				if c.ties == TiesRandom && c.rng.IntN(ties) == 0 {
					best = i
				}
			}
		}
		return best, nil
	case RuleRoundRobin:
		i := c.next % n
		c.next = (i + 1) % n
		return i, nil
	case RuleP2C:
		if n == 1 {
			return 0, nil
		}
		a := c.rng.IntN(n)
		b := c.rng.IntN(n - 1)
		if b >= a {
			b++
		}
		if c.ties == TiesFirst && b < a {
			a, b = b, a
		}
		if inFlight[b] < inFlight[a] {
			return b, nil
		}
		return a, nil
	}
	return 0, fmt.Errorf("unknown proxy rule %q", rule)
}
