package conc

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The calls run at once (each waits for all to have started), and their
// errors come back joined in order.
func TestAllRunsAtOnce(t *testing.T) {
	var started atomic.Int32
	wait := func() error {
		started.Add(1)
		deadline := time.Now().Add(5 * time.Second)
		for started.Load() < 3 {
			if time.Now().After(deadline) {
				return errors.New("the others never started")
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	if err := All(wait, wait, wait); err != nil {
		t.Fatal(err)
	}
	a, b := errors.New("a"), errors.New("b")
	err := Each(3, func(i int) error { return []error{a, nil, b}[i] })
	if !errors.Is(err, a) || !errors.Is(err, b) || err.Error() != "a\nb" {
		t.Errorf("err = %v", err)
	}
	if All() != nil {
		t.Error("no calls: an error")
	}
}
