package stack

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

func TestExpandDBInitKinds(t *testing.T) {
	dir := t.TempDir()
	schema := fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "CREATE TABLE items (id int);\n")
	plain := fakelab.WriteFile(t, filepath.Join(dir, "plain.dump"), "--\n-- PostgreSQL database dump\n--\nCREATE TABLE t (x int);\n")
	custom := fakelab.WriteFile(t, filepath.Join(dir, "db.dump"), "PGDMP\x01\x10\x00binary")
	seed := filepath.Join(dir, "seed")
	fakelab.WriteFile(t, filepath.Join(seed, "20-rows.sql"), "INSERT INTO items VALUES (2);")
	fakelab.WriteFile(t, filepath.Join(seed, "10-rows.sql"), "INSERT INTO items VALUES (1);")
	fakelab.WriteFile(t, filepath.Join(seed, "README"), "not applied")

	got, err := ExpandDBInit([]string{schema, seed, plain, custom})
	if err != nil {
		t.Fatal(err)
	}
	want := []InitFile{{schema, "sql"}, {filepath.Join(seed, "10-rows.sql"), "sql"}, {filepath.Join(seed, "20-rows.sql"), "sql"}, {plain, "sql"}, {custom, "custom"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}

	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for in, msg := range map[string]string{
		filepath.Join(dir, "nope.sql"): "nope.sql: no such file or folder",
		empty:                          "the folder holds no .sql file",
	} {
		if _, err := ExpandDBInit([]string{in}); err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line with %q", in, err, msg)
		}
	}
}

func TestParsePsqlError(t *testing.T) {
	stderr := "psql:/tmp/rttlab-init/001-schema.sql:1: NOTICE:  table \"x\" does not exist, skipping\n" +
		"psql:/tmp/rttlab-init/001-schema.sql:7: ERROR:  syntax error at or near \"CREAT\"\nLINE 1: CREAT TABLE items (id int);\n        ^\n"
	file, line, msg, ok := ParsePsqlError(stderr)
	if !ok || file != "/tmp/rttlab-init/001-schema.sql" || line != 7 || msg != `ERROR: syntax error at or near "CREAT"` {
		t.Fatalf("got %q %d %q %v", file, line, msg, ok)
	}
	if _, _, _, ok := ParsePsqlError("psql: error: connection to server failed\n"); ok {
		t.Error("a connection error has no file and line")
	}
}

func TestEnvParsing(t *testing.T) {
	if k, v, err := ParseEnvFlag("A_1=x=y"); err != nil || k != "A_1" || v != "x=y" {
		t.Errorf("got %q %q %v", k, v, err)
	}
	for _, bad := range []string{"A", "=x", "1A=x", "A-B=x"} {
		if _, _, err := ParseEnvFlag(bad); err == nil || !strings.Contains(err.Error(), "NAME=VALUE") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	env, err := ParseEnvFile("app.env", []byte("# comment\n\nexport A=1\nB=\"two words\"\nC='3'\nD=\n"))
	if err != nil || env["A"] != "1" || env["B"] != "two words" || env["C"] != "3" || env["D"] != "" || len(env) != 4 {
		t.Fatalf("got %v %v", env, err)
	}
	if _, err := ParseEnvFile("app.env", []byte("A=1\nnot a pair\n")); err == nil || err.Error() != `app.env:2: "not a pair" is not NAME=VALUE` {
		t.Errorf("err = %v", err)
	}
}

func TestOwnAppName(t *testing.T) {
	for in, want := range map[string]string{
		"example/shop:1.4":                       "shop",
		"registry.example:5000/team/Shop_API:v2": "shop-api",
		"shop@sha256:abcd":                       "shop",
		"1app":                                   "app-1app",
	} {
		if got := OwnAppName(in); got != want || !apps.ValidName(got) {
			t.Errorf("OwnAppName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A user's image is checked, never built: the line says what to do.
func TestCheckOwnImage(t *testing.T) {
	f := enginefake.New()
	ctx := context.Background()
	if _, err := CheckOwnImage(ctx, f, "example/shop:1.4"); err == nil || err.Error() != "image example/shop:1.4 is not present locally: build or pull it first" {
		t.Errorf("err = %v", err)
	}
	want := f.AddImage("example/shop:1.4", nil)
	if id, err := CheckOwnImage(ctx, f, "example/shop:1.4"); err != nil || id != want {
		t.Errorf("id %q err %v", id, err)
	}
	if n := f.CountCalls("BuildImage") + f.CountCalls("PullImage"); n != 0 {
		t.Errorf("%d builds or pulls", n)
	}
}

// An own app may not take the name of an app of the tree or of a variant
// of one; another own app's name is not the tree's.
func TestIsTreeApp(t *testing.T) {
	l := fakelab.New(t)
	all := l.Apps
	all["shop"] = &apps.Meta{Name: "shop", Kind: "app", Image: "example/shop:1.4"}
	for name, want := range map[string]bool{"go": true, "axum-raw": true, "postgres": true, "shop": false, "cobol": false} {
		if got := IsTreeApp(all, name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

// A target runs the user's image, or the one rttlab builds for its app.
func TestTargetImage(t *testing.T) {
	l := fakelab.New(t)
	if got := TargetImage(l.Target("axum-raw"), engine.Platform{}); got != engine.ImageRef("axum") {
		t.Errorf("variant: %s", got)
	}
	if got := TargetImage(apps.Target{Name: "shop", Meta: &apps.Meta{Name: "shop"}, Image: "example/shop:1.4"}, engine.Platform{}); got != "example/shop:1.4" {
		t.Errorf("own image: %s", got)
	}
}

func TestReadEnvFile(t *testing.T) {
	dir := t.TempDir()
	env, err := ReadEnvFile(fakelab.WriteFile(t, filepath.Join(dir, "app.env"), "export LOG_LEVEL=warn\nTOKEN='a b'\n"))
	if err != nil || len(env) != 2 || env["LOG_LEVEL"] != "warn" || env["TOKEN"] != "a b" {
		t.Errorf("env %v %v", env, err)
	}
	if _, err := ReadEnvFile(filepath.Join(dir, "gone.env")); err == nil || !strings.Contains(err.Error(), "gone.env") {
		t.Errorf("no file: %v", err)
	}
	bin := fakelab.WriteFile(t, filepath.Join(dir, "bin.env"), "A=1\nB=\x00\n")
	if _, err := ReadEnvFile(bin); err == nil || !strings.HasPrefix(err.Error(), bin+":2: not a text file") {
		t.Errorf("binary: %v", err)
	}
	for k, want := range map[string]bool{"A_1": true, "_x": true, "1A": false, "A-B": false, "": false} {
		if ValidEnvKey(k) != want {
			t.Errorf("ValidEnvKey(%q) = %v", k, !want)
		}
	}
}
