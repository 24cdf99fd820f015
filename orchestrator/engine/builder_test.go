package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/rttlab/rttlab/apps"
)

// contextImages is an ImageStore that keeps the context and options of
// every build; builds of the tag in fail fail.
type contextImages struct {
	mu     sync.Mutex
	builds []recordedBuild
	fail   string
}

type recordedBuild struct {
	Opts  BuildOptions
	Files map[string]tarFile
}

type tarFile struct {
	Mode int64
	Data string
}

func (c *contextImages) ImageID(context.Context, string) (string, error) { return "", ErrNotFound }
func (c *contextImages) PullImage(context.Context, string) error         { return errors.New("no registry") }
func (c *contextImages) ImportImage(context.Context, io.Reader, string) error {
	return errors.New("no import")
}
func (c *contextImages) RemoveImages(context.Context, map[string]string) ([]string, error) {
	return nil, nil
}

func (c *contextImages) BuildImage(ctx context.Context, r io.Reader, o BuildOptions) (BuildResult, error) {
	files := map[string]tarFile{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return BuildResult{}, err
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = tarFile{h.Mode, string(data)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.builds = append(c.builds, recordedBuild{o, files})
	if o.Tag == c.fail {
		return BuildResult{}, &StreamError{Msg: "The command '/bin/sh -c make' returned a non-zero code: 2"}
	}
	return BuildResult{ID: "sha256:" + o.Tag}, nil
}

// Build builds each named app from its folder: tagged with ImageRef,
// labelled with the app, its build args, and every stage but the last of
// a multi-stage Dockerfile labelled too so that `clean --images` finds it.
func TestBuilderBuild(t *testing.T) {
	fsys := fstest.MapFS{
		"pg/Dockerfile":       {Data: []byte("FROM debian:trixie-slim\nCOPY init.sql /\n")},
		"pg/init.sql":         {Data: []byte("create table t();\n")},
		"axum/Dockerfile":     {Data: []byte("FROM debian:trixie-slim AS build\nRUN cargo build\nFROM debian:trixie-slim\nCOPY --from=build /app /app\n")},
		"axum/src/main.rs":    {Data: []byte("fn main() {}\n")},
		"axum/entrypoint":     {Data: []byte("#!/bin/sh\nexec /app\n")},
		"other/Dockerfile":    {Data: []byte("FROM scratch\n")},
		"unrelated/README.md": {Data: []byte("not an app\n")},
	}
	st := &contextImages{}
	b := &Builder{
		Images: st, FS: fsys, NoCache: true, Log: io.Discard,
		Apps: map[string]*apps.Meta{
			"pg":   {Name: "pg", BuildArgs: map[string]string{"PG_MAJOR": "17"}},
			"axum": {Name: "axum"},
		},
	}
	built, err := b.Build(context.Background(), []string{"pg", "axum"})
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 2 || built[0].App != "pg" || built[0].Tag != ImageRef("pg") || built[0].ID != "sha256:"+ImageRef("pg") || built[1].App != "axum" {
		t.Fatalf("built %+v", built)
	}
	pg, axum := st.builds[0], st.builds[1]
	if pg.Opts.Tag != ImageRef("pg") || pg.Opts.Labels[LabelApp] != "pg" || len(pg.Opts.Labels) != 1 ||
		pg.Opts.BuildArgs["PG_MAJOR"] != "17" || !pg.Opts.NoCache || pg.Opts.Log != io.Discard {
		t.Errorf("pg build options %+v", pg.Opts)
	}
	if len(pg.Files) != 2 || pg.Files["Dockerfile"].Data != string(fsys["pg/Dockerfile"].Data) || pg.Files["init.sql"].Mode != 0o644 {
		t.Errorf("pg context %v: the folder's files, the single-stage Dockerfile untouched", pg.Files)
	}
	if df := axum.Files["Dockerfile"].Data; df != "FROM debian:trixie-slim AS build\nRUN cargo build\nLABEL io.rttlab.app=\"axum\"\nFROM debian:trixie-slim\nCOPY --from=build /app /app\n" {
		t.Errorf("axum Dockerfile in the context:\n%s", df)
	}
	if axum.Files["entrypoint"].Mode != 0o755 || axum.Files["src/"].Mode != 0o755 || axum.Files["src/main.rs"].Mode != 0o644 {
		t.Errorf("axum context %v", axum.Files)
	}
}

func TestBuilderBuildFailures(t *testing.T) {
	fsys := fstest.MapFS{"a/Dockerfile": {Data: []byte("FROM x\n")}, "b/Dockerfile": {Data: []byte("FROM x\nRUN make\n")}}
	b := &Builder{FS: fsys, Apps: map[string]*apps.Meta{"a": {Name: "a"}, "b": {Name: "b"}}}

	b.Images = &contextImages{}
	built, err := b.Build(context.Background(), []string{"a", "nope", "b"})
	if err == nil || err.Error() != `unknown app "nope" (known: a, b)` || len(built) != 1 || built[0].App != "a" {
		t.Errorf("unknown app: %+v, %v", built, err)
	}

	b.Images = &contextImages{fail: ImageRef("b")}
	built, err = b.Build(context.Background(), []string{"a", "b"})
	var se *StreamError
	if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "apps/b: The command") || len(built) != 1 {
		t.Errorf("failing build: %+v, %v", built, err)
	}
}

// fakeGo puts a go command on PATH that reports version v and, for a
// build, writes into its -o file what it was asked: arguments, folder,
// environment and the go.mod and files it found there. FAKE_GO_FAIL makes
// the build fail.
func fakeGo(t *testing.T, v string) {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
if [ "$1" = env ] && [ "$2" = GOVERSION ]; then
	echo ` + v + `
	exit 0
fi
[ "$1" = build ] || { echo "fake go: unexpected $*" >&2; exit 2; }
out= prev=
for a in "$@"; do
	[ "$prev" = -o ] && out=$a
	prev=$a
done
if [ -n "$FAKE_GO_FAIL" ]; then
	echo "# example.com/x"
	echo "./main.go:3:1: syntax error: non-declaration statement outside function body"
	exit 1
fi
{
	echo "args: $*"
	echo "dir: $(pwd)"
	echo "env: CGO_ENABLED=$CGO_ENABLED GOOS=$GOOS GOARCH=$GOARCH GOWORK=$GOWORK GOFLAGS=$GOFLAGS"
	echo "files:" $(ls)
	if [ -f go.mod ]; then echo "go.mod:"; cat go.mod; fi
} > "$out"
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOWORK", "")
	t.Setenv("FAKE_GO_FAIL", "")
}

// report reads the fake go's report into lines by prefix.
func report(t *testing.T, data []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	s := string(data)
	for _, k := range []string{"args", "dir", "env", "files"} {
		i := strings.Index(s, k+": ")
		if i < 0 {
			t.Fatalf("report lacks %s:\n%s", k, s)
		}
		m[k], _, _ = strings.Cut(s[i+len(k)+2:], "\n")
	}
	if _, mod, ok := strings.Cut(s, "go.mod:\n"); ok {
		m["go.mod"] = mod
	}
	return m
}

func withFindSource(t *testing.T, dir string, err error) {
	old := findSource
	findSource = func() (string, error) { return dir, err }
	t.Cleanup(func() { findSource = old })
}

// From a checkout, a Go program is cross-built for the engine with cgo
// off, in the module root, reproducibly; only rttlab itself carries its
// version and commit.
func TestCrossBuildFromCheckout(t *testing.T) {
	fakeGo(t, "go1.99.0")
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module github.com/rttlab/rttlab\n\ngo 1.22\n\ntoolchain go1.23.4\n"), 0o644)
	withFindSource(t, src, nil)
	b := &Builder{GOOS: "linux", GOARCH: "arm64", Version: "v1.2 beta", Commit: "abc123"}
	for _, c := range []struct {
		pkg, wantArgs string
	}{
		{"./cmd/rttlab", "build -trimpath -buildvcs=false -o OUT -ldflags -X main.version=v1.2_beta -X main.commit=abc123 ./cmd/rttlab"},
		{"./apps/go", "build -trimpath -buildvcs=false -o OUT ./apps/go"},
	} {
		out, err := b.crossBuild(context.Background(), apps.GoBuild{Package: c.pkg, Output: "prog"})
		if err != nil {
			t.Fatalf("%s: %v", c.pkg, err)
		}
		r := report(t, out)
		args := r["args"]
		if i := strings.Index(args, "-o "); i >= 0 {
			o, _, _ := strings.Cut(args[i+3:], " ")
			if filepath.Base(o) != "prog" {
				t.Errorf("%s: output %s", c.pkg, o)
			}
			args = strings.Replace(args, o, "OUT", 1)
		}
		if args != c.wantArgs {
			t.Errorf("%s: go %s\nwant go %s", c.pkg, args, c.wantArgs)
		}
		if r["dir"] != src {
			t.Errorf("%s: built in %s, want the checkout %s", c.pkg, r["dir"], src)
		}
		if r["env"] != "CGO_ENABLED=0 GOOS=linux GOARCH=arm64 GOWORK= GOFLAGS=" {
			t.Errorf("%s: env %s", c.pkg, r["env"])
		}
	}
	b.Commit = ""
	out, _ := b.crossBuild(context.Background(), apps.GoBuild{Package: "./cmd/rttlab", Output: "prog"})
	if args := report(t, out)["args"]; !strings.Contains(args, "-ldflags -X main.version=v1.2_beta ./cmd/rttlab") {
		t.Errorf("without a commit: %s", args)
	}
}

// A go on PATH older than the checkout needs is not used; with downloads
// off there is no way, and the error says what to install.
func TestCrossBuildGoTooOld(t *testing.T) {
	fakeGo(t, "go1.21.0")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "")
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module github.com/rttlab/rttlab\n\ngo 1.23.4\n"), 0o644)
	b := &Builder{SrcDir: src, GOOS: "linux", GOARCH: "amd64"}
	_, err := b.crossBuild(context.Background(), apps.GoBuild{Package: "./apps/go", Output: "x"})
	if !errors.Is(err, errNoDownload) || !strings.Contains(err.Error(), "no go command 1.23.4 or later on PATH") {
		t.Errorf("err %v", err)
	}
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module m\ngo 1.23.4 ) broken\n"), 0o644)
	if _, err := b.crossBuild(context.Background(), apps.GoBuild{Package: "./apps/go", Output: "x"}); err == nil || !strings.HasPrefix(err.Error(), "cross-build ./apps/go: ") {
		t.Errorf("broken go.mod: %v", err)
	}
}

// A failing compile names the package, the source, the platform and the
// compiler's last lines.
func TestCrossBuildFailure(t *testing.T) {
	fakeGo(t, "go1.99.0")
	t.Setenv("FAKE_GO_FAIL", "1")
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module github.com/rttlab/rttlab\n\ngo 1.22\n"), 0o644)
	b := &Builder{SrcDir: src, GOOS: "linux", GOARCH: "amd64"}
	_, err := b.crossBuild(context.Background(), apps.GoBuild{Package: "./apps/go", Output: "x"})
	if err == nil || !strings.HasPrefix(err.Error(), "go build ./apps/go (checkout source) for linux/amd64: exit status 1\n") ||
		!strings.HasSuffix(err.Error(), "\n    ./main.go:3:1: syntax error: non-declaration statement outside function body") {
		t.Errorf("err %v", err)
	}
}

// Outside a checkout an app's program is built from the embedded source,
// written out as its own module whose go.mod pins this binary's versions,
// with workspaces off and the module graph allowed to fill go.sum.
func TestCrossBuildFromEmbeddedSource(t *testing.T) {
	if _, err := releaseVersion(runtime.Version()); err != nil {
		t.Skipf("a development Go (%s) has no release to write in go.mod", runtime.Version())
	}
	fakeGo(t, "go1.99.0")
	withFindSource(t, "", errors.New("the rttlab source tree was not found"))
	oldDeps := buildDeps
	buildDeps = func() ([]*debug.Module, error) {
		return []*debug.Module{{Path: "github.com/jackc/pgx/v5", Version: "v5.12.0"}, {Path: "golang.org/x/text", Version: "v0.42.0"}}, nil
	}
	t.Cleanup(func() { buildDeps = oldDeps })
	fsys := fstest.MapFS{
		"hello/main.go":      {Data: []byte("package main\n\nimport _ \"github.com/jackc/pgx/v5\"\n\nfunc main() {}\n")},
		"hello/main_test.go": {Data: []byte("package main\n")},
		"hello/go.sum":       {Data: []byte("stale\n")},
		"hello/Dockerfile":   {Data: []byte("FROM debian:trixie-slim\nCOPY hello /usr/local/bin/\n")},
	}
	st := &contextImages{}
	b := &Builder{Images: st, FS: fsys, GOOS: "linux", GOARCH: "amd64",
		Apps: map[string]*apps.Meta{"hello": {Name: "hello", GoBuild: []apps.GoBuild{{Package: "./apps/hello", Output: "hello"}}}}}
	if _, err := b.Build(context.Background(), []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	ctxFiles := st.builds[0].Files
	if _, ok := ctxFiles["main.go"]; ok {
		t.Error("the program's source is in the image context")
	}
	bin, ok := ctxFiles["hello"]
	if !ok || bin.Mode != 0o755 {
		t.Fatalf("the built program is not in the context: %v", ctxFiles)
	}
	r := report(t, []byte(bin.Data))
	if r["files"] != "Dockerfile go.mod main.go" {
		t.Errorf("module files %q: no tests, no stale go.sum", r["files"])
	}
	if !strings.HasSuffix(r["args"], " .") || !strings.HasSuffix(r["env"], "GOWORK=off GOFLAGS=-mod=mod") {
		t.Errorf("args %q env %q", r["args"], r["env"])
	}
	mod := r["go.mod"]
	if !strings.Contains(mod, "module github.com/rttlab/rttlab/apps/hello\n") || !strings.Contains(mod, "\tgithub.com/jackc/pgx/v5 v5.12.0\n") ||
		!strings.Contains(mod, "\tgolang.org/x/text v0.42.0 // indirect\n") {
		t.Errorf("go.mod:\n%s", mod)
	}

	// An embedded program importing a module the binary lacks cannot be
	// built; the error says to rebuild from a checkout.
	buildDeps = func() ([]*debug.Module, error) { return nil, nil }
	_, err := b.Build(context.Background(), []string{"hello"})
	if err == nil || !strings.HasPrefix(err.Error(), "build hello: cross-build ./apps/hello from the embedded source: ") || !strings.Contains(err.Error(), "rebuild rttlab from a checkout") {
		t.Errorf("missing dependency: %v", err)
	}
	buildDeps = func() ([]*debug.Module, error) { return nil, errors.New("this binary carries no build info") }
	if _, err := b.Build(context.Background(), []string{"hello"}); err == nil || !strings.Contains(err.Error(), "no build info") {
		t.Errorf("no build info: %v", err)
	}
}

// Outside a checkout the agent image carries the running rttlab when it
// fits the engine's platform.
func TestBuildCarriesTheRunningBinary(t *testing.T) {
	withFindSource(t, "", errors.New("the rttlab source tree was not found"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	st := &contextImages{}
	b := &Builder{Images: st, FS: fstest.MapFS{"agent/Dockerfile": {Data: []byte("FROM debian:trixie-slim\n")}}, GOOS: "linux", GOARCH: runtime.GOARCH,
		Apps: map[string]*apps.Meta{"agent": {Name: "agent", GoBuild: []apps.GoBuild{{Package: "./cmd/rttlab", Output: "rttlab"}}}}}
	if _, err := b.Build(context.Background(), []string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if got := st.builds[0].Files["rttlab"]; got.Mode != 0o755 || !bytes.Equal([]byte(got.Data), want) {
		t.Errorf("rttlab in the context: %d bytes mode %o, want the running binary's %d", len(got.Data), got.Mode, len(want))
	}
	b.GOARCH = "s390x"
	if _, err := b.Build(context.Background(), []string{"agent"}); err == nil || !strings.HasPrefix(err.Error(), "build agent: cross-build ./cmd/rttlab: ") {
		t.Errorf("another platform without a checkout: %v", err)
	}
}

// For a foreign platform every image is built with the platform set,
// tagged with its architecture and started from that platform's base (the
// tree's Dockerfiles unchanged), but for the images named Native (the
// agent), built for the engine's own platform under today's tag.
func TestBuilderBuildForeignPlatform(t *testing.T) {
	fsys := fstest.MapFS{
		"pg/Dockerfile":    {Data: []byte("FROM debian:trixie-slim\nCOPY init.sql /\n")},
		"pg/init.sql":      {Data: []byte("create table t();\n")},
		"axum/Dockerfile":  {Data: []byte("FROM debian:trixie-slim AS build\nRUN cargo build\nFROM debian:trixie-slim\nCOPY --from=build /app /app\n")},
		"agent/Dockerfile": {Data: []byte("FROM debian:trixie-slim\nCOPY rttlab /\n")},
	}
	arm, _ := ParsePlatform("linux/arm64")
	arm, _ = arm.On(EngineInfo{OS: "linux", Arch: "amd64"})
	st := &contextImages{}
	b := &Builder{
		Images: st, FS: fsys, Log: io.Discard, GOOS: "linux", GOARCH: "amd64", Platform: arm, Native: []string{"agent"}, NoCache: true,
		Apps: map[string]*apps.Meta{"pg": {Name: "pg"}, "axum": {Name: "axum"}, "agent": {Name: "agent"}},
	}
	built, err := b.Build(context.Background(), []string{"pg", "axum", "agent"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{arm.ImageRef("pg"), arm.ImageRef("axum"), ImageRef("agent")}
	for i, bt := range built {
		if bt.Tag != want[i] {
			t.Errorf("image %d tagged %s, want %s", i, bt.Tag, want[i])
		}
	}
	var tags []string
	for _, b := range st.builds {
		tags = append(tags, b.Opts.Tag)
	}
	// axum's image is built (without the cache, as asked), then its build
	// stage tagged from the cache the image's build just made.
	if wantTags := []string{want[0], want[1], StageRef(want[1], "build"), want[2]}; !slices.Equal(tags, wantTags) {
		t.Fatalf("built %q, want %q", tags, wantTags)
	}
	pg, axum, stage, agent := st.builds[0], st.builds[1], st.builds[2], st.builds[3]
	if !axum.Opts.NoCache || stage.Opts.Target != "build" || stage.Opts.Platform != arm || len(stage.Opts.Labels) != 0 || stage.Opts.NoCache || stage.Files["Dockerfile"] != axum.Files["Dockerfile"] {
		t.Errorf("stage build %+v", stage.Opts)
	}
	if pg.Opts.Platform.String() != "linux/arm64" || axum.Opts.Platform.String() != "linux/arm64" || agent.Opts.Platform.String() != "linux/amd64" {
		t.Errorf("platforms %s %s %s", pg.Opts.Platform, axum.Opts.Platform, agent.Opts.Platform)
	}
	base := arm.BaseRef()
	if df := pg.Files["Dockerfile"].Data; df != "FROM "+base+"\nCOPY init.sql /\n" {
		t.Errorf("pg Dockerfile:\n%s", df)
	}
	if df := axum.Files["Dockerfile"].Data; df != "FROM "+base+" AS build\nRUN cargo build\nLABEL io.rttlab.app=\"axum\"\nFROM "+base+"\nCOPY --from=build /app /app\n" {
		t.Errorf("axum Dockerfile:\n%s", df)
	}
	if _, edited := agent.Files["Dockerfile"]; !edited || agent.Files["Dockerfile"].Data != string(fsys["agent/Dockerfile"].Data) {
		t.Errorf("the agent's Dockerfile changed: %q", agent.Files["Dockerfile"].Data)
	}
}

// replacing is an ImageStore whose tags already name an image, that
// removes what a build replaced.
type replacing struct {
	contextImages
	removed []string
}

func (r *replacing) ImageID(_ context.Context, ref string) (string, error) {
	return "sha256:old-" + ref, nil
}

func (r *replacing) RemoveReplaced(_ context.Context, id string) error {
	r.removed = append(r.removed, id)
	return nil
}

// A rebuild that gives a tag a new image removes the one it replaced, so
// that no untagged image is left behind.
func TestBuildRemovesTheReplacedImage(t *testing.T) {
	fsys := fstest.MapFS{"pg/Dockerfile": {Data: []byte("FROM debian:trixie-slim\n")}}
	r := &replacing{}
	b := &Builder{Images: r, FS: fsys, Apps: map[string]*apps.Meta{"pg": {Name: "pg"}}}
	if _, err := b.Build(context.Background(), []string{"pg"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:old-" + ImageRef("pg")}; !slices.Equal(r.removed, want) {
		t.Errorf("removed %q, want %q", r.removed, want)
	}
}
