package engine

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/rttlab/rttlab/apps"
)

func TestToolchainNaming(t *testing.T) {
	for in, want := range map[string]string{
		"go1.26.8": "go1.26.8", "1.26.8": "go1.26.8", "go1.26.8 X:nodwarf5": "go1.26.8",
		"1.26": "go1.26.0", "go1.27rc1": "go1.27rc1", "1.16": "go1.16",
	} {
		if got, err := releaseVersion(in); err != nil || got != want {
			t.Errorf("releaseVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"devel go1.27-abcdef", "", "gofish"} {
		if got, err := releaseVersion(bad); err == nil {
			t.Errorf("releaseVersion(%q) = %q, want an error", bad, got)
		}
	}
	mv := toolchainModVersion("go1.26.8", "linux", "amd64")
	if mv != "v0.0.1-go1.26.8.linux-amd64" {
		t.Fatalf("module version %s", mv)
	}
	src, err := sourceFromEnv(func(string) string { return "" }, "go1.26.8")
	if err != nil {
		t.Fatal(err)
	}
	if u := src.zipURL(mv); u != "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go1.26.8.linux-amd64.zip" {
		t.Errorf("zip URL %s", u)
	}
	if u := src.lookupURL(mv); u != "https://sum.golang.org/lookup/golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64" {
		t.Errorf("lookup URL %s", u)
	}
	if u := src.lookupURLs(mv); len(u) != 2 || u[0] != "https://proxy.golang.org/sumdb/sum.golang.org/lookup/golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64" {
		t.Errorf("lookup URLs %v", u)
	}
}

func TestToolchainSourceFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		env  []string
		want string // in the error
	}{
		{[]string{"GOPROXY", "off"}, "GOPROXY=off"},
		{[]string{"GOPROXY", "direct"}, "set GOPROXY=https://proxy.golang.org"},
		{[]string{"GOTOOLCHAIN", "local"}, "GOTOOLCHAIN=local"},
		{[]string{"GOTOOLCHAIN", "go1.26.8+path"}, "unset GOTOOLCHAIN"},
	} {
		_, err := sourceFromEnv(env(c.env...), "go1.26.8")
		if !errors.Is(err, errNoDownload) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "install Go 1.26.8") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", c.env, err)
		}
	}
	src, err := sourceFromEnv(env("GOPROXY", "direct,https://goproxy.example/,https://other", "GOSUMDB", "off"), "go1.26.8")
	if err != nil || src.Proxy != "https://goproxy.example" || src.SumDB != "" {
		t.Errorf("proxy list: %+v %v", src, err)
	}
	src, _ = sourceFromEnv(env("GOSUMDB", "sum.golang.org https://sum.example/"), "go1.26.8")
	if src.SumDB != "https://sum.example" {
		t.Errorf("sumdb with URL: %+v", src)
	}
}

// fakeToolchainZip writes a module zip shaped like the toolchain's and
// returns its path and h1: hash.
func fakeToolchainZip(t *testing.T, dir, mv string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		"bin/go": "#!/bin/sh\necho fake go\n", "pkg/tool/linux_amd64/compile": "x", "src/fmt/print.go": "package fmt\n", "go.env": "GOTOOLCHAIN=auto\n",
	} {
		w, err := zw.Create(toolchainModule + "@" + mv + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "tc.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := dirhash.HashZip(p, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return p, h
}

func TestToolchainChecksum(t *testing.T) {
	mv := toolchainModVersion("go1.26.8", "linux", "amd64")
	zp, h := fakeToolchainZip(t, t.TempDir(), mv)
	lookup := "123\n" + toolchainModule + " " + mv + " " + h + "\n" + toolchainModule + " " + mv + "/go.mod h1:AAAA=\n\ngo.sum database tree\n"
	got, err := parseLookup([]byte(lookup), toolchainModule, mv)
	if err != nil || got != h {
		t.Fatalf("parseLookup = %q, %v; want %q", got, err, h)
	}
	if _, err := parseLookup([]byte(lookup), toolchainModule, "v0.0.1-go1.26.7.linux-amd64"); err == nil {
		t.Error("parseLookup found another version's hash")
	}
	if err := checkZip(zp, h); err != nil {
		t.Errorf("checkZip of the right hash: %v", err)
	}
	if err := checkZip(zp, "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("checkZip of a wrong hash: %v", err)
	}
}

func TestToolchainAtomicInstall(t *testing.T) {
	mv := toolchainModVersion("go1.26.8", runtime.GOOS, runtime.GOARCH)
	zp, _ := fakeToolchainZip(t, t.TempDir(), mv)
	dir := filepath.Join(t.TempDir(), "toolchain")
	var wg sync.WaitGroup
	roots := make([]string, 6)
	errs := make([]error, 6)
	for i := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			roots[i], errs[i] = unpackToolchain(zp, dir, "go1.26.8", mv)
		}()
	}
	wg.Wait()
	for i := range roots {
		if errs[i] != nil || roots[i] != filepath.Join(dir, "go1.26.8") {
			t.Fatalf("install %d: %s %v", i, roots[i], errs[i])
		}
	}
	st, err := os.Stat(filepath.Join(dir, "go1.26.8", "bin", "go"))
	if err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("bin/go: %v %v", st, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "go1.26.8", "pkg/tool/linux_amd64/compile")); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("tool not executable: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "go1.26.8", "go.env")); err != nil || st.Mode()&0o111 != 0 {
		t.Errorf("go.env: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left behind in the cache: %v", ents)
	}
}

// installToolchain against a local proxy and checksum database.
func TestToolchainInstallHTTP(t *testing.T) {
	mv := toolchainModVersion("go1.26.8", runtime.GOOS, runtime.GOARCH)
	zp, h := fakeToolchainZip(t, t.TempDir(), mv)
	data, _ := os.ReadFile(zp)
	hash := h
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/golang.org/toolchain/@v/" + mv + ".zip":
			w.Write(data)
		case "/lookup/golang.org/toolchain@" + mv:
			io.WriteString(w, "1\n"+toolchainModule+" "+mv+" "+hash+"\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	src := toolchainSource{Proxy: srv.URL, SumDB: srv.URL, Client: srv.Client()}
	ctx := context.Background()

	hash = "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	dir := filepath.Join(t.TempDir(), "toolchain")
	if _, err := installToolchain(ctx, src, dir, "go1.26.8", io.Discard); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("tampered zip: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused zip left %v", ents)
	}
	hash = h
	var progress bytes.Buffer
	root, err := installToolchain(ctx, src, dir, "go1.26.8", &progress)
	if err != nil || !usable(root) {
		t.Fatalf("install: %s %v", root, err)
	}
	if !strings.Contains(progress.String(), "downloading Go toolchain go1.26.8") || !strings.Contains(progress.String(), "ready") {
		t.Errorf("progress %q", progress.String())
	}
	if _, err := installToolchain(ctx, src, dir, "go1.27.0", io.Discard); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown release: %v", err)
	}
}

func TestEmbeddedGoMod(t *testing.T) {
	pkg, err := fs.Sub(apps.FS(""), "go")
	if err != nil {
		t.Fatal(err)
	}
	imports, err := embeddedImports(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(imports, " ") != "github.com/jackc/pgx/v5 github.com/jackc/pgx/v5/stdlib" {
		t.Fatalf("imports of apps/go: %v", imports)
	}
	deps := []*debug.Module{
		{Path: "github.com/jackc/pgx/v5", Version: "v5.12.0"},
		{Path: "github.com/jackc/pgx", Version: "v4.0.0"},
		{Path: "golang.org/x/text", Version: "v0.42.0"},
		{Path: "golang.org/x/sync", Version: "v0.1.0", Replace: &debug.Module{Path: "golang.org/x/sync", Version: "v0.23.0"}},
		{Path: "example.com/local", Version: "v1.0.0", Replace: &debug.Module{Path: "../local"}},
	}
	mod, err := embeddedGoMod("github.com/rttlab/rttlab/apps/go", "1.26.8", imports, deps)
	if err != nil {
		t.Fatal(err)
	}
	want := `// Generated by rttlab from its build info.

module github.com/rttlab/rttlab/apps/go

go 1.26.8

require (
	github.com/jackc/pgx/v5 v5.12.0
)

require (
	github.com/jackc/pgx v4.0.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
`
	if string(mod) != want {
		t.Errorf("go.mod:\n%s\nwant:\n%s", mod, want)
	}
	for imp, msg := range map[string]string{
		"github.com/rttlab/rttlab/workloads": "rttlab itself",
		"example.com/missing":                "built without it",
		"example.com/local/pkg":              "replacement",
	} {
		if _, err := embeddedGoMod("m", "1.26.8", []string{imp}, deps); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v", imp, err)
		}
	}
	dir := t.TempDir()
	if err := writeEmbeddedModule(pkg, dir, mod); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"main.go": true, "go.mod": true, "main_test.go": false} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s written: %v, want %v", name, err == nil, want)
		}
	}
}

func TestCrossBuildSource(t *testing.T) {
	old := findSource
	defer func() { findSource = old }()
	findSource = func() (string, error) { return "", errors.New("the rttlab source tree was not found") }
	b := &Builder{FS: apps.FS(""), GOOS: "linux", GOARCH: runtime.GOARCH}
	for _, c := range []struct {
		pkg, arch, kind, src string
	}{
		{"./apps/go", runtime.GOARCH, fromEmbedded, "go"},
		{"./apps/go", "s390x", fromEmbedded, "go"},
		{"./cmd/rttlab", runtime.GOARCH, fromSelf, ""},
		{"./cmd/rttlab", "s390x", "", ""},
		{"./apps/postgres", runtime.GOARCH, "", ""}, // no Go source
		{"./workloads", runtime.GOARCH, "", ""},
	} {
		b.GOARCH = c.arch
		kind, src, err := b.goSource(apps.GoBuild{Package: c.pkg, Output: "x"})
		if kind != c.kind || src != c.src || (c.kind == "") != (err != nil) {
			t.Errorf("%s for %s: %q %q %v", c.pkg, c.arch, kind, src, err)
		}
		if err != nil && !strings.Contains(err.Error(), "source tree was not found") {
			t.Errorf("%s: %v", c.pkg, err)
		}
	}
	// A checkout wins, found or given.
	findSource = func() (string, error) { return "/src/rttlab", nil }
	b.GOARCH = runtime.GOARCH
	for _, pkg := range []string{"./apps/go", "./cmd/rttlab"} {
		if kind, src, err := b.goSource(apps.GoBuild{Package: pkg}); kind != fromCheckout || src != "/src/rttlab" || err != nil {
			t.Errorf("%s in a checkout: %q %q %v", pkg, kind, src, err)
		}
	}
	b.SrcDir = "/given"
	if kind, src, _ := b.goSource(apps.GoBuild{Package: "./apps/go"}); kind != fromCheckout || src != "/given" {
		t.Errorf("SrcDir: %q %q", kind, src)
	}
	if need, err := goDirective("../../go.mod"); err != nil || !strings.HasPrefix(need, "1.") {
		t.Errorf("go directive of the checkout: %q %v", need, err)
	}
}

// TestNetEmbeddedBuild is the whole path for a person without Go or a
// checkout: download the toolchain into an empty cache and build apps/go
// from the embedded source, with the module versions of a built rttlab
// (a test binary's build info lists none). It needs the network:
// RTTLAB_NET_TEST=1 RTTLAB_BIN=/path/to/rttlab.
func TestNetEmbeddedBuild(t *testing.T) {
	if os.Getenv("RTTLAB_NET_TEST") != "1" || os.Getenv("RTTLAB_BIN") == "" {
		t.Skip("set RTTLAB_NET_TEST=1 and RTTLAB_BIN to a built rttlab to download a Go toolchain and modules")
	}
	bi, err := buildinfo.ReadFile(os.Getenv("RTTLAB_BIN"))
	if err != nil {
		t.Fatal(err)
	}
	oldDeps := buildDeps
	defer func() { buildDeps = oldDeps }()
	buildDeps = func() ([]*debug.Module, error) { return bi.Deps, nil }
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("GOPATH", "")
	t.Setenv("GOMODCACHE", "")
	t.Setenv("GOCACHE", "")
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOTOOLCHAIN", "")
	t.Setenv("PATH", "/usr/bin:/bin")
	old := findSource
	defer func() { findSource = old }()
	findSource = func() (string, error) { return "", errors.New("the rttlab source tree was not found") }
	var progress bytes.Buffer
	b := &Builder{FS: apps.FS(""), GOOS: "linux", GOARCH: "amd64", Progress: io.MultiWriter(&progress, os.Stderr)}
	start := time.Now()
	bin, err := b.crossBuild(context.Background(), apps.GoBuild{Package: "./apps/go", Output: "feed"})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil || f.Machine != elf.EM_X86_64 {
		t.Fatalf("not a linux/amd64 program: %v", err)
	}
	// A second build reuses the cached toolchain.
	start2 := time.Now()
	if _, err := b.crossBuild(context.Background(), apps.GoBuild{Package: "./apps/go", Output: "feed"}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(progress.String(), "downloading Go toolchain") != 1 {
		t.Errorf("progress %q", progress.String())
	}
	cache, _ := os.UserCacheDir()
	t.Logf("first build %.1fs (feed %.1f MB), second %.1fs; cache %s: %s", took.Seconds(), float64(len(bin))/1e6, time.Since(start2).Seconds(), cache, duSize(filepath.Join(cache, "rttlab")))
}

func duSize(dir string) string {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}

// The toolchain download for linux/arm64 (a DGX's Grace, an arm64 CI
// runner) from the real module proxy, checked against the real checksum
// database as for this host's: the release this binary was built with,
// whose bin/go must be an arm64 ELF. About 70 MB, so it runs with the
// integration tests only.
func TestIntegrationToolchainDownloadArm64(t *testing.T) {
	if testing.Short() || os.Getenv("RTTLAB_INTEGRATION") == "" {
		t.Skip("downloads about 70 MB from the module proxy: runs under make test (RTTLAB_INTEGRATION=1)")
	}
	release, err := releaseVersion(runtime.Version())
	if err != nil {
		t.Skipf("not a release build of Go (%s): %v", runtime.Version(), err)
	}
	src, err := sourceFromEnv(os.Getenv, release)
	if err != nil {
		t.Skipf("toolchain downloads are off here: %v", err)
	}
	if src.SumDB == "" {
		t.Skip("GOSUMDB is off: nothing to check the download against")
	}
	dir := t.TempDir()
	var progress bytes.Buffer
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := installToolchainFor(ctx, src, dir, release, "linux", "arm64", &progress)
	if err != nil {
		t.Fatalf("download %s for linux/arm64: %v", release, err)
	}
	t.Logf("%s(%v in all)", progress.String(), time.Since(start).Round(time.Millisecond))
	f, err := elf.Open(filepath.Join(root, "bin", "go"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("bin/go is for %v, want EM_AARCH64", f.Machine)
	}
}
