package engine

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultBuildParallel is how many images BuildEach builds at once: the
// apt-bound images wait on the network while a compile (axum, the Go
// programs) keeps the CPUs busy, so three overlap well on two cores.
const DefaultBuildParallel = 3

// BuildEach builds the named images concurrently, at most parallel at a
// time (<1: DefaultBuildParallel). Images with a builder stage (a compile)
// start first, since they take longest. done is called once per name as
// each finishes, never concurrently; a failure does not stop the others
// unless done returns false, which cancels the builds still running and
// skips those not started (their done gets the context's error). While
// builds run, Progress gets a line every progressEvery naming what is
// still building and for how long.
func (b *Builder) BuildEach(ctx context.Context, names []string, parallel int, done func(name string, r Built, err error) bool) {
	if parallel < 1 {
		parallel = DefaultBuildParallel
	}
	order := b.buildOrder(names)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var mu sync.Mutex // guards running and serialises done
	running := map[string]time.Time{}
	stopTick := everyTick(func(now time.Time) {
		mu.Lock()
		line := runningLine(running, now)
		mu.Unlock()
		if line != "" {
			fmt.Fprintf(b.progress(), "  still building: %s\n", line)
		}
	})

	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, n := range order {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			mu.Lock()
			done(n, Built{}, ctx.Err())
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func(n string) {
			defer wg.Done()
			defer func() { <-sem }()
			mu.Lock()
			running[n] = time.Now()
			mu.Unlock()
			res, err := b.Build(ctx, []string{n})
			var r Built
			if len(res) > 0 {
				r = res[0]
			}
			mu.Lock()
			delete(running, n)
			if !done(n, r, err) {
				cancel()
			}
			mu.Unlock()
		}(n)
	}
	wg.Wait()
	stopTick()
}

// progressEvery is how often BuildEach says what is still building.
var progressEvery = 30 * time.Second

// buildOrder puts images with more than one stage (a compile) first and
// keeps the given order otherwise.
func (b *Builder) buildOrder(names []string) []string {
	out := append([]string(nil), names...)
	heavy := func(n string) bool {
		m, ok := b.Apps[n]
		if !ok || b.FS == nil {
			return false
		}
		df, err := fs.ReadFile(b.FS, m.Name+"/Dockerfile")
		return err == nil && countFroms(df) > 1
	}
	sort.SliceStable(out, func(i, j int) bool { return heavy(out[i]) && !heavy(out[j]) })
	return out
}

func countFroms(df []byte) int {
	n := 0
	for _, l := range strings.Split(string(df), "\n") {
		t := strings.TrimSpace(l)
		if len(t) > 5 && strings.EqualFold(t[:5], "FROM ") {
			n++
		}
	}
	return n
}

// runningLine lists running builds, longest first: "axum (95 s), redmine (40 s)".
func runningLine(running map[string]time.Time, now time.Time) string {
	type item struct {
		name string
		d    time.Duration
	}
	var items []item
	for n, t := range running {
		items = append(items, item{n, now.Sub(t)})
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].d != items[j].d {
			return items[i].d > items[j].d
		}
		return items[i].name < items[j].name
	})
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = fmt.Sprintf("%s (%d s)", it.name, int(it.d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// tickProgress writes what(elapsed) to w every progressEvery until the
// returned stop is called: for a long step with no output of its own.
func tickProgress(w io.Writer, what func(elapsed time.Duration) string) (stop func()) {
	if w == nil {
		return func() {}
	}
	start := time.Now()
	return everyTick(func(now time.Time) { fmt.Fprintln(w, what(now.Sub(start))) })
}

// everyTick calls fn with the time every progressEvery, on a goroutine of
// its own, until the returned stop is called; stop returns once fn no
// longer runs.
func everyTick(fn func(now time.Time)) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				fn(now)
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}
