package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type app struct {
	Name string `yaml:"name"`
	Runs int    `yaml:"runs,omitempty"`
}

type plan struct {
	Name     string    `yaml:"name"`
	Seed     uint64    `yaml:"seed"`
	DelaysMs []float64 `yaml:"delays_ms"`
	Runs     int       `yaml:"runs"`
	Apps     []app     `yaml:"apps"`
	Env      map[string]string
}

var schema = Schema{
	Kinds: map[string]string{"[]planfile.app": "a list of apps"},
	Where: map[string]string{"app": "in an app entry"},
}

func decode(t *testing.T, text string) (*plan, *Doc, error) {
	t.Helper()
	doc, err := Parse("p.yaml", []byte(text), Keys(reflect.TypeFor[plan]()))
	if err != nil {
		return nil, nil, err
	}
	p := &plan{Runs: 10}
	return p, doc, doc.Decode(p, schema)
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"empty":            {"", "p.yaml: the plan is empty"},
		"comment only":     {"# nothing\n", "p.yaml: the plan is empty"},
		"not a mapping":    {"- a\n- b\n", "p.yaml:1: a plan is a mapping of fields (known: name, seed, delays_ms, runs, apps)"},
		"unknown field":    {"name: x\ncolour: red\n", `p.yaml:2: unknown field "colour" (known: name, seed, delays_ms, runs, apps)`},
		"unknown in app":   {"apps:\n  - name: go\n    runz: 2\n", `p.yaml:3: unknown field "runz" in an app entry (known: name, runs)`},
		"wrong kind":       {"delays_ms: [0, fast]\n", `p.yaml:1: "fast" is not a number`},
		"list kind":        {"apps: go\n", `p.yaml:1: "go" is not a list of apps`},
		"mapping for list": {"delays_ms: {a: 1}\n", `p.yaml:1: a mapping is not a list of numbers`},
		"20 digits":        {"name: x\nruns: 12345678901234567890\n", `p.yaml:2: "1234567...`},
		"too large":        {"runs: 99999999999999999999999\n", `is too large: give a whole number of at most 18 digits`},
		"negative seed":    {"seed: -1\n", `p.yaml:1: "-1" is not a non-negative whole number`},
		"bool":             {"runs: true\n", `p.yaml:1: "true" is not a whole number`},
		"empty value":      {"runs: \"\"\n", `p.yaml:1: an empty value is not a whole number`},
		"unclosed [":       {"name: x\ndelays_ms: [0, 0.5\nruns: 2\n", "p.yaml:2: a list opened with [ is not closed"},
		"unclosed [ late":  {"name: x\nruns: 2\ndelays_ms: [0, 0.5\n", "p.yaml:3: a list opened with [ is not closed"},
		"unclosed {":       {"name: x\napps:\n  - {name: go\n", "p.yaml:3: a mapping opened with { is not closed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := decode(t, c.text)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "planfile.") || strings.Contains(err.Error(), "!!") {
				t.Errorf("not one line in the plan's words: %q", err)
			}
		})
	}
}

func TestDecodeKeepsDefaults(t *testing.T) {
	p, doc, err := decode(t, "name: x\ndelays_ms: [0, 1]\napps:\n  - name: go\n  - name: node\n    runs: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if p.Runs != 10 || len(p.DelaysMs) != 2 || len(p.Apps) != 2 {
		t.Fatalf("decoded %+v", p)
	}
	if !doc.Has("apps[1].runs") || doc.Has("apps[0].runs") || doc.Has("runs") {
		t.Error("Has does not tell a given field from a left-out one")
	}
	if got := doc.Index("apps", "name", "node"); got != 1 {
		t.Errorf("Index(node) = %d", got)
	}
	if got := doc.Index("apps", "name", "rails"); got != -1 {
		t.Errorf("Index(rails) = %d", got)
	}
	for path, want := range map[string]int{"name": 1, "delays_ms[1]": 2, "apps.1.runs": 6, "apps[1]": 5, "apps[7].runs": 4, "colour": 0, "apps[name=node].runs": 6, "apps[name=rails]": 4} {
		if got := doc.Line(path); got != want {
			t.Errorf("Line(%s) = %d, want %d", path, got, want)
		}
	}
	err = doc.Place(At("apps[1].runs", "app node: runs 0 is meaningless: leave it out to use the plan's runs"))
	if err.Error() != "p.yaml:6: app node: runs 0 is meaningless: leave it out to use the plan's runs" {
		t.Errorf("Place = %q", err)
	}
	if err := doc.Place(errors.New("plain")); err.Error() != "p.yaml: plain" {
		t.Errorf("Place(plain) = %q", err)
	}
	if Name("some/dir/mine.yml") != "mine" {
		t.Error("Name")
	}
}

// A plan file is read through the capped reader.
func TestRead(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{big: "over the limit of 1 MiB", "/dev/zero": "plan /dev/zero is a device: give a regular file of at most 1 MiB"} {
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want %q", path, err, want)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a missing plan's error does not wrap os.ErrNotExist")
	}
}
