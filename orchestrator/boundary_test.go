package orchestrator

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/rttlab/rttlab/"

// The studies, and the two programs (the command, and the agent that runs
// in the containers and serves the studies' proxies), which may import
// every study and which nothing else imports.
var (
	studies  = []string{"rtt", "placement", "workers"}
	programs = []string{"cmd", "agent"}
)

// shared are the packages every study uses: none of them, tests included,
// imports a study. No study imports another either.
var shared = []string{"orchestrator", "netem", "workloads", "apps", "compose", "internal", "results"}

// imports lists, per folder of the module under root, what its Go files
// import of the module.
func imports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) {
				if out[rel] == nil {
					out[rel] = map[string]bool{}
				}
				out[rel][strings.TrimPrefix(p, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// under reports whether pkg is top or inside it.
func under(pkg, top string) bool { return pkg == top || strings.HasPrefix(pkg, top+"/") }

func studyOf(pkg string) string {
	for _, s := range append(studies, programs...) {
		if under(pkg, s) {
			return s
		}
	}
	return ""
}

// violations lists the imports that cross the boundaries: a shared
// package (the lab, the statistics, the plot kit, the load drivers, the
// shapers) importing a study or a program, a study importing another.
func violations(all map[string]map[string]bool) []string {
	var out []string
	for pkg, ims := range all {
		own := studyOf(pkg)
		isShared := false
		for _, s := range shared {
			isShared = isShared || under(pkg, s)
		}
		for im := range ims {
			st := studyOf(im)
			switch {
			case st == "":
			case isShared:
				out = append(out, pkg+" imports "+im+": the shared packages import no study")
			case own == "cmd" || own == "agent" || st == own:
			default:
				out = append(out, pkg+" imports "+im+": a study imports no other study, nor a program")
			}
		}
	}
	return out
}

// TestNoSharedPackageImportsAStudy fails when an import of the module
// crosses its boundaries.
func TestNoSharedPackageImportsAStudy(t *testing.T) {
	all := imports(t, "..")
	if len(all) < 20 || !all["cmd/rttlab"]["placement"] || !all["placement"]["orchestrator/stack"] {
		t.Fatalf("the module's imports were not read (%d packages): is the test running in orchestrator/?", len(all))
	}
	for _, v := range violations(all) {
		t.Error(v)
	}
}

// The check sees each kind of crossing, and lets the programs and a
// study's own packages be.
func TestBoundaryViolations(t *testing.T) {
	got := violations(map[string]map[string]bool{
		"orchestrator/shaping": {"rtt": true, "netem": true},
		"results/stats":        {"workers": true},
		"placement":            {"rtt/report": true, "results": true},
		"workers":              {"agent": true},
		"rtt":                  {"rtt/report": true},
		"cmd/rttlab":           {"rtt": true, "placement": true, "agent": true},
		"agent":                {"workers": true},
	})
	if len(got) != 4 {
		t.Errorf("%d violations, want 4: %q", len(got), got)
	}
}

// TestRuntimeIsALeaf fails when the runtime interface imports a package
// of the module (it is what every runtime implements, so it stands on
// none of them), or when it or its fake imports the Docker API: no Docker
// type crosses the interface.
func TestRuntimeIsALeaf(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir("runtime", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		leaf := filepath.Dir(path) == "runtime"
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			switch {
			case strings.HasPrefix(p, "github.com/docker/"):
				t.Errorf("%s imports %s: no Docker API package crosses the runtime interface", path, p)
			case leaf && strings.HasPrefix(p, module):
				t.Errorf("%s imports %s: orchestrator/runtime imports nothing of the module", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no file of orchestrator/runtime was read: is the test running in orchestrator/?")
	}
}

// The agent client runs its verbs through the runtime interface alone, so
// that any runtime's members, and the runtimes themselves, can use it: no
// Docker type, and not Docker's runtime, is behind it.
func TestAgentClientSeesOnlyTheRuntime(t *testing.T) {
	files, err := filepath.Glob("agentclient/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no file of orchestrator/agentclient was read (%v): is the test running in orchestrator/?", err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "github.com/docker/") || p == module+"orchestrator/engine" {
				t.Errorf("%s imports %s: the agent client asks only the runtime interface", path, p)
			}
		}
	}
}
