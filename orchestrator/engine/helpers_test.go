package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rttlab/rttlab/apps"
)

// BuiltByRttlab tells the images `clean --images` may remove from a
// user's image that inherited io.rttlab.app by building FROM one of them.
func TestBuiltByRttlab(t *testing.T) {
	app := map[string]string{LabelApp: "pg"}
	for _, c := range []struct {
		tags   []string
		labels map[string]string
		want   bool
	}{
		{[]string{"rttlab/pg:latest"}, app, true},
		{[]string{"ci-pg:latest"}, app, true},   // RTTLAB_IMAGE_PREFIX=ci-
		{[]string{"<none>:<none>"}, app, true},  // an earlier stage of a build
		{nil, app, true},                        // untagged
		{[]string{"pg:latest"}, app, true},      // an empty prefix
		{[]string{"rttlab/pg:1.0"}, app, false}, // tagged by a person
		{[]string{"me/mypg:latest"}, app, false},
		{[]string{"rttlab/pg:latest", "me/pg-plus:1"}, app, false},
		{[]string{"rttlab/go:latest"}, map[string]string{LabelApp: "pg"}, false},
		{[]string{"rttlab/pg:latest"}, nil, false},
		{[]string{"rttlab/pg:latest"}, map[string]string{LabelRun: "abc"}, false},
		{[]string{"rttlab/pg:latest-arm64"}, app, true},                     // a foreign platform's
		{[]string{"rttlab/pg:latest-stage-build"}, app, true},               // a build stage
		{[]string{"rttlab/pg:latest-arm64-stage-build"}, app, true},         // both
		{[]string{"rttlab/pg:latest-mine"}, app, false},                     // tagged by a person
		{[]string{"rttlab/pg:latest-stage-x:y"}, app, false},                // not a stage tag
		{[]string{"rttlab/pg:latest-riscv64-stage-build"}, app, false},      // not a platform of rttlab's
		{[]string{"rttlab/pg:latest-arm64", "rttlab/pg:latest"}, app, true}, // side by side
	} {
		if got := BuiltByRttlab(c.tags, c.labels); got != c.want {
			t.Errorf("BuiltByRttlab(%q, %v) = %v, want %v", c.tags, c.labels, got, c.want)
		}
	}
}

func TestImagePrefix(t *testing.T) {
	t.Setenv("RTTLAB_IMAGE_PREFIX", "")
	if p := imagePrefix(); p != "rttlab/" {
		t.Errorf("default prefix %q", p)
	}
	t.Setenv("RTTLAB_IMAGE_PREFIX", "ci/rttlab-")
	if p := imagePrefix(); p != "ci/rttlab-" {
		t.Errorf("prefix from the environment %q", p)
	}
}

func TestTextHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"one line":            "one line",
		"first\nsecond\nmore": "first",
		"":                    "",
		"\nafter a blank":     "",
	} {
		if got := FirstLine(in); got != want {
			t.Errorf("FirstLine(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"0123456789abcdef0123456789abcdef": "0123456789ab",
		"0123456789ab":                     "0123456789ab",
		"abc":                              "abc",
		"rttlab-abc-db":                    "rttlab-abc-db", // a name
		"rttlab_network_1":                 "rttlab_network_1",
	} {
		if got := ShortID(in); got != want {
			t.Errorf("ShortID(%q) = %q, want %q", in, got, want)
		}
	}
	se := &StreamError{Msg: "no space left on device"}
	if se.Error() != "no space left on device" {
		t.Errorf("StreamError without output: %q", se.Error())
	}
	se.Tail = []string{"Step 3/4 : RUN make", "make: *** [all] Error 1"}
	if want := "no space left on device\n  last output:\n    Step 3/4 : RUN make\n    make: *** [all] Error 1"; se.Error() != want {
		t.Errorf("StreamError %q, want %q", se.Error(), want)
	}
}

func TestGoDirective(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mod, want string
		err       bool
	}{
		{"module m\n\ngo 1.22\n", "1.22", false},
		// A newer toolchain line wins (ParseLax alone drops it, as a
		// main module's directive).
		{"module m\n\ngo 1.22\n\ntoolchain go1.23.4\n", "1.23.4", false},
		{"module m\n\ngo 1.24.2\n\ntoolchain go1.23.4\n", "1.24.2", false},
		{"module m\n\ngo 1.22\n\ntoolchain default\n", "1.22", false},
		{"module m\n", "1.16", false},
		{"module m\n\ngo 1.22 (\n", "", true},
	} {
		p := filepath.Join(dir, "go.mod")
		if err := os.WriteFile(p, []byte(c.mod), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := goDirective(p)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("goDirective(%q) = %q, %v; want %q", c.mod, got, err, c.want)
		}
	}
	if _, err := goDirective(filepath.Join(dir, "missing", "go.mod")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing go.mod: %v", err)
	}
}

// FindSource finds the checkout from RTTLAB_SRC, else from the working
// folder upwards, and says how to point at one when neither works.
func TestFindSource(t *testing.T) {
	t.Setenv("RTTLAB_SRC", "/given/rttlab")
	if dir, err := FindSource(); dir != "/given/rttlab" || err != nil {
		t.Errorf("with RTTLAB_SRC: %q, %v", dir, err)
	}
	t.Setenv("RTTLAB_SRC", "")
	root, err := filepath.Abs("../..") // tests run in orchestrator/engine
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := FindSource(); dir != root || err != nil {
		t.Errorf("from the package folder: %q, %v; want %q", dir, err, root)
	}
	// Another module's go.mod on the way up is not ours.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644)
	os.MkdirAll(filepath.Join(other, "sub"), 0o755)
	t.Chdir(filepath.Join(other, "sub"))
	if exe, _ := os.Executable(); strings.HasPrefix(exe, root) {
		t.Skip("the test binary lies inside the checkout")
	}
	if dir, err := FindSource(); err == nil || !strings.Contains(err.Error(), "set RTTLAB_SRC") {
		t.Errorf("outside a checkout: %q, %v", dir, err)
	}
}

// While images build, Progress names each one still building, longest
// first; the builds here wait until it has.
func TestBuildEachReportsWhatIsStillBuilding(t *testing.T) {
	SetProgressEvery(t, time.Millisecond)
	fsys := fstest.MapFS{"a/Dockerfile": {Data: []byte("FROM x\n")}, "b/Dockerfile": {Data: []byte("FROM x\n")}}
	reported := make(chan struct{})
	both := func(l string) bool { return strings.Contains(l, "a (") && strings.Contains(l, "b (") }
	w := &lineWatch{want: both, seen: reported}
	st := &gateImages{gate: reported}
	b := &Builder{Images: st, FS: fsys, Apps: map[string]*apps.Meta{"a": {Name: "a"}, "b": {Name: "b"}}, Progress: w}
	var errs []error
	b.BuildEach(context.Background(), []string{"a", "b"}, 2, func(n string, r Built, err error) bool {
		errs = append(errs, err)
		return true
	})
	if len(errs) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatalf("builds: %v", errs)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.lines, both)
	if i < 0 || !stillBuildingRE.MatchString(w.lines[i]) {
		t.Errorf("progress %q", w.lines)
	}
	if b.progress() != w {
		t.Error("progress writer")
	}
	if (&Builder{}).progress() != io.Discard {
		t.Error("no progress writer discards")
	}
}

var stillBuildingRE = regexp.MustCompile(`^  still building: (a \(0 s\), b \(0 s\)|b \(0 s\), a \(0 s\))\n$`)

// lineWatch keeps what it is written and closes seen once a line is
// wanted.
type lineWatch struct {
	mu    sync.Mutex
	lines []string
	want  func(line string) bool
	seen  chan struct{}
	once  sync.Once
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	if w.want(string(p)) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// gateImages builds wait until gate is closed.
type gateImages struct {
	contextImages
	gate chan struct{}
}

func (g *gateImages) BuildImage(ctx context.Context, r io.Reader, o BuildOptions) (BuildResult, error) {
	select {
	case <-g.gate:
	case <-time.After(10 * time.Second):
		return BuildResult{}, errors.New("nothing reported the build in 10 s")
	}
	return g.contextImages.BuildImage(ctx, r, o)
}
