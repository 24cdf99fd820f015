// Package conc runs independent calls at once: the orchestration asks
// several containers the same thing (each agent its delay, each member
// whether it runs), and the engine answers each call in tens of
// milliseconds, so asking them one after the other adds up per task.
package conc

import (
	"context"
	"errors"
	"sync"
	"time"
)

// All runs every fn at once, waits for all of them and returns their
// errors joined, in argument order (nil when none failed).
func All(fns ...func() error) error {
	return Each(len(fns), func(i int) error { return fns[i]() })
}

// Each runs fn(0), ..., fn(n-1) at once, waits for all of them and
// returns their errors joined, in index order.
func Each(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Sleep waits for d, or returns ctx's error as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
