package engine_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
)

// EnsureBase takes the cheapest way to the base image: none when it is
// there, a pull when the registry answers, else debootstrap. What it asks
// the engine, in order, is the decision.
func TestEnsureBaseDecisions(t *testing.T) {
	noDebootstrap(t)
	for _, c := range []struct {
		name     string
		setup    func(f *enginefake.Engine)
		opts     engine.BaseOptions
		path     engine.BasePath
		calls    []string
		wantErr  error
		errParts []string
	}{
		{
			name:  "present",
			setup: func(f *enginefake.Engine) { f.AddImage(engine.BaseImage, nil) },
			path:  engine.BasePresent,
			calls: []string{"ImageID debian:trixie-slim"},
		},
		{
			name:  "pullable",
			setup: func(f *enginefake.Engine) { f.Pullable[engine.BaseImage] = true },
			path:  engine.BasePulled,
			calls: []string{"ImageID debian:trixie-slim", "PullImage debian:trixie-slim", "ImageID debian:trixie-slim"},
		},
		{
			name:  "another ref",
			setup: func(f *enginefake.Engine) { f.Pullable["debian:forky-slim"] = true },
			opts:  engine.BaseOptions{Ref: "debian:forky-slim", Suite: "forky"},
			path:  engine.BasePulled,
			calls: []string{"ImageID debian:forky-slim", "PullImage debian:forky-slim", "ImageID debian:forky-slim"},
		},
		{
			name:     "neither present nor pullable, no debootstrap",
			setup:    func(f *enginefake.Engine) {},
			calls:    []string{"ImageID debian:trixie-slim", "PullImage debian:trixie-slim"},
			wantErr:  engine.ErrNoDebootstrap,
			errParts: []string{"base image debian:trixie-slim is missing", "no such host"},
		},
		{
			name:     "pull skipped",
			setup:    func(f *enginefake.Engine) { f.Pullable[engine.BaseImage] = true },
			opts:     engine.BaseOptions{SkipPull: true},
			calls:    []string{"ImageID debian:trixie-slim"},
			wantErr:  engine.ErrNoDebootstrap,
			errParts: []string{"base image debian:trixie-slim is missing"},
		},
		{
			name:     "engine failure on the look-up",
			setup:    func(f *enginefake.Engine) { f.FailOn("ImageID", "", 1, errors.New("engine restarting")) },
			calls:    []string{"ImageID debian:trixie-slim"},
			errParts: []string{"engine restarting"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := enginefake.New()
			c.setup(f)
			path, id, err := engine.EnsureBase(context.Background(), f, c.opts)
			if got := f.Calls(); !slices.Equal(got, c.calls) {
				t.Errorf("calls %q, want %q", got, c.calls)
			}
			if c.errParts != nil {
				if err == nil || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				for _, p := range c.errParts {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("err %q lacks %q", err, p)
					}
				}
				if path != "" || id != "" {
					t.Errorf("failure returned %q %q", path, id)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if path != c.path || !strings.HasPrefix(id, "sha256:") {
				t.Errorf("EnsureBase = %q %q, want %q and the image's id", path, id, c.path)
			}
		})
	}
}

// noDebootstrap leaves nothing on PATH, debootstrap included.
func noDebootstrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
}

// fakeDebootstrap puts a debootstrap on PATH that writes a small tree the
// way the real one does (apt's caches included), printing its I: lines;
// it waits for the file $FAKE_DEBOOTSTRAP_WAIT when that is set, and
// fails when $FAKE_DEBOOTSTRAP_FAIL is.
func fakeDebootstrap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("EnsureBase runs debootstrap only as root")
	}
	bin := t.TempDir()
	script := `#!/bin/sh
[ "$1" = --variant=minbase ] || { echo "E: arguments: $*"; exit 2; }
shift
arch=
case "$1" in --arch=*) arch=${1#--arch=}; shift;; esac
suite=$1 dir=$2 mirror=$3
echo "I: Retrieving InRelease"
echo "I: Retrieving libc6"
echo "I: Retrieving bash"
if [ -n "$FAKE_DEBOOTSTRAP_WAIT" ]; then
	i=0
	while [ ! -e "$FAKE_DEBOOTSTRAP_WAIT" ]; do
		sleep 0.005
		i=$((i+1))
		[ $i -gt 2000 ] && { echo "E: nobody reported progress"; exit 3; }
	done
fi
if [ -n "$FAKE_DEBOOTSTRAP_FAIL" ]; then
	echo "E: Couldn't download packages: libc6"
	exit 1
fi
mkdir -p "$dir/etc" "$dir/bin" "$dir/var/cache/apt/archives" "$dir/var/lib/apt/lists"
echo "$suite $mirror" > "$dir/etc/debootstrap-args"
[ -n "$arch" ] && echo "$arch" > "$dir/etc/debootstrap-arch"
printf '#!/bin/sh\n' > "$dir/bin/bash"
[ -n "$FAKE_DEBOOTSTRAP_BIG" ] && head -c 1048576 /dev/zero > "$dir/bin/big"
chmod 755 "$dir/bin/bash"
echo deb > "$dir/var/cache/apt/archives/bash_5.2.37-2_amd64.deb"
echo index > "$dir/var/lib/apt/lists/deb.debian.org_debian_dists_trixie_InRelease"
: > "$dir/var/lib/apt/lists/lock"
echo "I: Base system installed successfully."
`
	if err := os.WriteFile(filepath.Join(bin, "debootstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_DEBOOTSTRAP_WAIT", "")
	t.Setenv("FAKE_DEBOOTSTRAP_FAIL", "")
	t.Setenv("FAKE_DEBOOTSTRAP_BIG", "")
}

// importing keeps the tarball EnsureBase imports.
type importing struct {
	*enginefake.Engine
	tarball []byte
}

func (i *importing) ImportImage(ctx context.Context, r io.Reader, ref string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	i.tarball = data
	return i.Engine.ImportImage(ctx, bytes.NewReader(data), ref)
}

func tarFiles(t *testing.T, data []byte) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "./")] = string(body)
	}
}

// With no image and no registry, EnsureBase debootstraps the suite from
// the mirror, drops apt's downloads and lists, imports the tree and
// reports the image's id.
func TestEnsureBaseDebootstraps(t *testing.T) {
	fakeDebootstrap(t)
	f := &importing{Engine: enginefake.New()}
	var log, progress bytes.Buffer
	path, id, err := engine.EnsureBase(context.Background(), f, engine.BaseOptions{
		Mirror: "http://mirror.example/debian", Log: &log, Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	if path != engine.BaseDebootstrapd || !strings.HasPrefix(id, "sha256:") {
		t.Errorf("EnsureBase = %q %q", path, id)
	}
	if want := []string{"ImageID debian:trixie-slim", "PullImage debian:trixie-slim", "ImportImage debian:trixie-slim", "ImageID debian:trixie-slim"}; !slices.Equal(f.Calls(), want) {
		t.Errorf("calls %q, want %q", f.Calls(), want)
	}
	files := tarFiles(t, f.tarball)
	if files["etc/debootstrap-args"] != "trixie http://mirror.example/debian\n" {
		t.Errorf("debootstrap ran with %q", files["etc/debootstrap-args"])
	}
	if _, ok := files["bin/bash"]; !ok {
		t.Errorf("the tree is not in the image: %v", files)
	}
	for name := range files {
		if strings.HasSuffix(name, ".deb") || strings.HasSuffix(name, "_InRelease") {
			t.Errorf("%s left in the image", name)
		}
	}
	if _, ok := files["var/lib/apt/lists/lock"]; !ok {
		t.Error("apt's lists folder lost more than the lists")
	}
	if !strings.Contains(log.String(), "I: Base system installed successfully.") {
		t.Errorf("debootstrap's output not logged: %q", log.String())
	}
	if progress.String() != "base image debian:trixie-slim: not present; debootstrap trixie from http://mirror.example/debian (a few minutes)\n" {
		t.Errorf("progress %q", progress.String())
	}
}

// stageWatch is a Progress writer that creates the file go once a line
// reports the stage it waits for, letting the fake debootstrap finish.
type stageWatch struct {
	mu          sync.Mutex
	lines       []string
	stage, goOn string
}

func (s *stageWatch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, string(p))
	if strings.Contains(string(p), s.stage) {
		os.WriteFile(s.goOn, nil, 0o644)
	}
	return len(p), nil
}

// While debootstrap runs silent for minutes, Progress says how far it got
// from the I: lines it printed so far.
func TestEnsureBaseReportsDebootstrapProgress(t *testing.T) {
	fakeDebootstrap(t)
	engine.SetProgressEvery(t, time.Millisecond)
	goOn := filepath.Join(t.TempDir(), "go-on")
	t.Setenv("FAKE_DEBOOTSTRAP_WAIT", goOn)
	w := &stageWatch{stage: "retrieving (3 packages so far)", goOn: goOn}
	_, _, err := engine.EnsureBase(context.Background(), &importing{Engine: enginefake.New()}, engine.BaseOptions{SkipPull: true, Progress: w})
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var tick string
	for _, l := range w.lines {
		if strings.Contains(l, "retrieving (3 packages so far)") {
			tick = l
		}
	}
	if !strings.HasPrefix(tick, "  debootstrap trixie: ") || !strings.Contains(tick, " s so far, ") {
		t.Errorf("progress lines %q", w.lines)
	}
}

func TestEnsureBaseDebootstrapFailures(t *testing.T) {
	fakeDebootstrap(t)
	t.Run("debootstrap fails", func(t *testing.T) {
		t.Setenv("FAKE_DEBOOTSTRAP_FAIL", "1")
		f := enginefake.New()
		_, _, err := engine.EnsureBase(context.Background(), f, engine.BaseOptions{SkipPull: true})
		if err == nil || !strings.HasPrefix(err.Error(), "debootstrap trixie: exit status 1") || !strings.Contains(err.Error(), "E: Couldn't download packages: libc6") {
			t.Errorf("err %v, want the exit status and debootstrap's last lines", err)
		}
		if f.CountCalls("ImportImage") != 0 {
			t.Error("a failed debootstrap was imported")
		}
	})
	t.Run("import fails", func(t *testing.T) {
		f := enginefake.New()
		f.FailOn("ImportImage", "", 1, errors.New("import debian:trixie-slim: no space left on device"))
		_, _, err := engine.EnsureBase(context.Background(), f, engine.BaseOptions{SkipPull: true})
		if err == nil || err.Error() != "import debian:trixie-slim: no space left on device" {
			t.Errorf("err %v", err)
		}
	})
}

// refusing fails every import at once, reading nothing (as the client does
// for a reference it cannot parse).
type refusing struct{ *enginefake.Engine }

func (refusing) ImportImage(context.Context, io.Reader, string) error {
	return errors.New("import: invalid reference format")
}

// An import that fails before reading the tree must not leave EnsureBase
// waiting for tar, blocked on a pipe nobody reads (a real tree is far
// bigger than a pipe's buffer).
func TestEnsureBaseImportRefusedEarly(t *testing.T) {
	fakeDebootstrap(t)
	t.Setenv("FAKE_DEBOOTSTRAP_BIG", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := engine.EnsureBase(ctx, refusing{enginefake.New()}, engine.BaseOptions{SkipPull: true})
	if err == nil || err.Error() != "import: invalid reference format" {
		t.Errorf("err %v, want the import's", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("EnsureBase returned after %v: it waited for tar until the context ended", el.Round(time.Second))
	}
}

func TestFakeEnsureBaseAndBuild(t *testing.T) {
	ctx := context.Background()
	f := enginefake.New()
	// Present: nothing to do. Pullable: pulled.
	id := f.AddImage(engine.BaseImage, nil)
	if path, got, err := engine.EnsureBase(ctx, f, engine.BaseOptions{}); err != nil || path != engine.BasePresent || got != id {
		t.Fatalf("present: %s %s %v", path, got, err)
	}
	f.Pullable["debian:forky-slim"] = true
	if path, got, err := engine.EnsureBase(ctx, f, engine.BaseOptions{Ref: "debian:forky-slim"}); err != nil || path != engine.BasePulled || got == "" {
		t.Fatalf("pull: %s %s %v", path, got, err)
	}
	f.FailOn("ImageID", "broken:1", 1, errors.New("inspect: engine error"))
	if _, _, err := engine.EnsureBase(ctx, f, engine.BaseOptions{Ref: "broken:1"}); err == nil || !strings.Contains(err.Error(), "engine error") {
		t.Fatalf("inspect error: %v", err)
	}

	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	b := &engine.Builder{Images: f, Apps: all, FS: apps.FS(""), GOOS: "linux", GOARCH: "amd64", Log: &log}
	built, err := b.Build(ctx, []string{"postgres"})
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 1 || built[0].Tag != engine.ImageRef("postgres") || built[0].ID == "" {
		t.Fatalf("built %+v", built)
	}
	fb := f.Builds[0]
	if fb.Opts.Labels[engine.LabelApp] != "postgres" || !slices.Contains(fb.Files, "Dockerfile") || !slices.Contains(fb.Files, "schema.sql") || !strings.Contains(log.String(), "Successfully tagged") {
		t.Errorf("build %+v files %v", fb.Opts, fb.Files)
	}
	if _, err := b.Build(ctx, []string{"cobol"}); err == nil || !strings.Contains(err.Error(), "known: ") {
		t.Errorf("unknown app: %v", err)
	}
	f.FailOn("BuildImage", engine.ImageRef("postgres"), 1, &engine.StreamError{Msg: "returned a non-zero code: 100", Tail: []string{"E: Unable to locate package postgresql-17"}})
	_, err = b.Build(ctx, []string{"postgres"})
	if err == nil || !strings.HasPrefix(err.Error(), "apps/postgres: ") || !strings.Contains(err.Error(), "postgresql-17") {
		t.Fatalf("build failure: %v", err)
	}
	if _, skip := engine.SkipReason(err); skip {
		t.Error("a failing package install is not a reason to skip an app")
	}
}
