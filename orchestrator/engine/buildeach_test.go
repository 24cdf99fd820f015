package engine

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rttlab/rttlab/apps"
)

// slowImages is an ImageStore whose builds take a while and count how many
// run at once.
type slowImages struct {
	mu       sync.Mutex
	now, max int
	order    []string
	fail     string
	wait     time.Duration
}

func (s *slowImages) ImageID(context.Context, string) (string, error) { return "", ErrNotFound }
func (s *slowImages) PullImage(context.Context, string) error         { return errors.New("no registry") }
func (s *slowImages) ImportImage(context.Context, io.Reader, string) error {
	return nil
}
func (s *slowImages) RemoveImages(context.Context, map[string]string) ([]string, error) {
	return nil, nil
}
func (s *slowImages) BuildImage(ctx context.Context, r io.Reader, o BuildOptions) (BuildResult, error) {
	io.Copy(io.Discard, r)
	s.mu.Lock()
	s.now++
	if s.now > s.max {
		s.max = s.now
	}
	s.order = append(s.order, o.Tag)
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.now--; s.mu.Unlock() }()
	if s.fail != "" && o.Tag == ImageRef(s.fail) {
		return BuildResult{}, errors.New("build failed")
	}
	select {
	case <-time.After(s.wait):
		return BuildResult{ID: "sha256:" + o.Tag}, nil
	case <-ctx.Done():
		return BuildResult{}, ctx.Err()
	}
}

func buildEachFixture(names ...string) (*Builder, *slowImages) {
	fsys := fstest.MapFS{}
	all := map[string]*apps.Meta{}
	for _, n := range names {
		df := "FROM debian:trixie-slim\n"
		if strings.HasPrefix(n, "heavy") {
			df = "FROM debian:trixie-slim AS build\nRUN make\nFROM debian:trixie-slim\n"
		}
		fsys[n+"/Dockerfile"] = &fstest.MapFile{Data: []byte(df)}
		all[n] = &apps.Meta{Name: n}
	}
	st := &slowImages{wait: 30 * time.Millisecond}
	return &Builder{Images: st, Apps: all, FS: fsys}, st
}

func TestBuildEachRunsAtMostParallelAtOnceHeaviestFirst(t *testing.T) {
	b, st := buildEachFixture("a", "b", "heavy1", "c", "d", "heavy2")
	var mu sync.Mutex
	var doneNames []string
	b.BuildEach(context.Background(), []string{"a", "b", "heavy1", "c", "d", "heavy2"}, 2, func(n string, r Built, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("%s: %v", n, err)
		}
		if r.App != n || r.ID == "" {
			t.Errorf("%s: result %+v", n, r)
		}
		doneNames = append(doneNames, n)
		return true
	})
	if len(doneNames) != 6 {
		t.Fatalf("done for %v", doneNames)
	}
	if st.max != 2 {
		t.Errorf("at most %d builds at once, want 2", st.max)
	}
	first := append([]string(nil), st.order[:2]...)
	sort.Strings(first) // the two start together, in either order
	if got := strings.Join(first, " "); got != ImageRef("heavy1")+" "+ImageRef("heavy2") {
		t.Errorf("first builds %s, want the two multi-stage images", got)
	}
}

func TestBuildEachStopsTheRestWhenDoneSaysSo(t *testing.T) {
	b, st := buildEachFixture("bad", "a", "b", "c", "d")
	st.wait = 2 * time.Second
	st.fail = "bad"
	var errs = map[string]error{}
	start := time.Now()
	b.BuildEach(context.Background(), []string{"bad", "a", "b", "c", "d"}, 2, func(n string, r Built, err error) bool {
		errs[n] = err // done is never called concurrently: -race checks it
		return err == nil
	})
	if len(errs) != 5 {
		t.Fatalf("done called for %d of 5", len(errs))
	}
	if errs["bad"] == nil || !strings.Contains(errs["bad"].Error(), "build failed") {
		t.Errorf("bad: %v", errs["bad"])
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if !errors.Is(errs[n], context.Canceled) {
			t.Errorf("%s after the failure: %v, want cancelled", n, errs[n])
		}
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("took %v: the running build was not cancelled", el)
	}
}

func TestRunningLineAndDebootstrapStage(t *testing.T) {
	now := time.Unix(1000, 0)
	got := runningLine(map[string]time.Time{"redmine": now.Add(-40 * time.Second), "axum": now.Add(-95 * time.Second)}, now)
	if got != "axum (95 s), redmine (40 s)" {
		t.Errorf("runningLine: %q", got)
	}
	for out, want := range map[string]string{
		"": "resolving packages",
		"I: Retrieving InRelease \nI: Checking Release signature\n":                   "checking Release signature",
		"I: Retrieving libc6 1\nI: Retrieving bash 1\n":                               "retrieving (2 packages so far)",
		"I: Retrieving a\nI: Extracting a...\nI: Unpacking a...\nI: Unpacking b...\n": "unpacking (2 packages so far)",
	} {
		if got := debootstrapStage(out); got != want {
			t.Errorf("debootstrapStage(%q) = %q, want %q", out, got, want)
		}
	}
}
