package apps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const goMeta = `name: go
description: test
port: 8080
health: /health
routes:
  - path: /feed
    statements: 3
  - path: /feed-naive
    statements: 12
  - path: /serial
    statements_per_n: true
gobuild:
  - package: ./apps/go
    output: feed
`

func TestParseMetaValid(t *testing.T) {
	m, err := ParseMeta("go", []byte(goMeta))
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != "app" || m.Port != 8080 || len(m.Routes) != 3 {
		t.Fatalf("parsed %+v", m)
	}
	r, ok := m.Route("/feed-naive")
	if !ok || r.Statements != 12 {
		t.Fatalf("route /feed-naive = %+v %v", r, ok)
	}
	if got := strings.Join(m.RoutePaths(), ","); got != "/feed,/feed-naive,/serial" {
		t.Fatalf("paths %s", got)
	}
}

func TestParseMetaErrors(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"name mismatch":  {strings.Replace(goMeta, "name: go", "name: node", 1), `does not match its folder`},
		"missing name":   {strings.Replace(goMeta, "name: go\n", "", 1), "name is missing"},
		"unknown field":  {goMeta + "colour: red\n", "field colour not found"},
		"bad port":       {strings.Replace(goMeta, "8080", "70000", 1), "out of range"},
		"no routes":      {"name: go\nport: 8080\nhealth: /health\n", "routes are missing"},
		"dup route":      {goMeta + "", ""},
		"relative route": {strings.Replace(goMeta, "path: /feed\n", "path: feed\n", 1), "must start with /"},
		"negative":       {strings.Replace(goMeta, "statements: 3", "statements: -3", 1), "negative"},
		"both counts":    {strings.Replace(goMeta, "statements_per_n: true", "statements_per_n: true\n    statements: 2", 1), "not both"},
		"bad kind":       {goMeta + "kind: robot\n", "kind \"robot\" is unknown"},
		"variant no env": {goMeta + "variants: [a]\n", "variant_env"},
		"bad yaml":       {"name: [", "app.yaml"},
	}
	for name, c := range cases {
		if c.want == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			_, err := ParseMeta("go", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "apps/go/app.yaml") {
				t.Fatalf("err = %v does not name the file", err)
			}
		})
	}
	dup := goMeta + "" // a route listed twice
	dup = strings.Replace(dup, "  - path: /serial\n    statements_per_n: true\n", "  - path: /feed\n    statements: 3\n", 1)
	if _, err := ParseMeta("go", []byte(dup)); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("duplicate route: err = %v", err)
	}
}

func TestTargetsAndResolveVariants(t *testing.T) {
	fsys := fstest.MapFS{
		"go/app.yaml":       {Data: []byte(goMeta)},
		"axum/app.yaml":     {Data: []byte(strings.Replace(goMeta, "name: go", "name: axum", 1) + "variants: [cached, raw]\nvariant_env: RTTLAB_AXUM_MODE\nenv:\n  RUST_LOG: warn\n")},
		"postgres/app.yaml": {Data: []byte("name: postgres\nkind: database\n")},
		"notes/readme.txt":  {Data: []byte("not an app")},
	}
	all, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range Targets(all) {
		names = append(names, tg.Name)
	}
	if got := strings.Join(names, ","); got != "axum-cached,axum-raw,go" {
		t.Fatalf("targets = %s", got)
	}
	raw, err := Resolve(all, "axum-raw")
	if err != nil {
		t.Fatal(err)
	}
	if raw.Meta.Name != "axum" || raw.Variant != "raw" || raw.Env["RTTLAB_AXUM_MODE"] != "raw" || raw.Env["RUST_LOG"] != "warn" {
		t.Fatalf("axum-raw = %+v", raw)
	}
	if _, err := Resolve(all, "axum"); err == nil || !strings.Contains(err.Error(), "known apps: axum-cached, axum-raw, go") {
		t.Fatalf("resolve axum: %v", err)
	}
	if _, err := Resolve(all, "postgres"); err == nil {
		t.Fatal("the database is not a runnable app")
	}
}

func TestEmbeddedAppsParse(t *testing.T) {
	all, err := Load(embedded)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"go", "postgres"} {
		if _, ok := all[n]; !ok {
			t.Errorf("embedded apps lack %s", n)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"go", "axum-raw", "my-app2"} {
		if !ValidName(ok) {
			t.Errorf("%q should be valid", ok)
		}
	}
	for _, bad := range []string{"", "Go", "2go", "a_b", "a/b", "../x", strings.Repeat("a", 40)} {
		if ValidName(bad) {
			t.Errorf("%q should be invalid", bad)
		}
	}
}

func TestScaffold(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "node"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "node", "app.yaml"), []byte(strings.Replace(goMeta, "name: go", "name: node", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "node", "server.js"), []byte("// server\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "node", "README.md"), []byte("node's own readme\n"), 0o644)
	files, err := Scaffold(dir, "mine", "node")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "mine", "app.yaml"))
	m, err := ParseMeta("mine", data)
	if err != nil {
		t.Fatal(err)
	}
	if m.GoBuild[0].Package != "./apps/mine" {
		t.Fatalf("gobuild package not renamed: %+v", m.GoBuild)
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "mine", "README.md"))
	if !strings.Contains(string(readme), "rttlab verify mine") {
		t.Fatalf("README stub: %s", readme)
	}
	for _, c := range []struct{ name, from, want string }{
		{"mine", "node", "already exists"},
		{"Bad_Name", "node", "invalid"},
		{"other", "cobol", `template "cobol" is unknown`},
		{"other", "rails", "not found"},
	} {
		if _, err := Scaffold(dir, c.name, c.from); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Scaffold(%s, %s): %v, want %q", c.name, c.from, err, c.want)
		}
	}
}
