package engine

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rttlab/rttlab/apps"
)

func TestLabelStages(t *testing.T) {
	df, err := fs.ReadFile(apps.FS(""), "axum/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	got := string(labelStages(df, LabelApp, "axum"))
	label := "LABEL io.rttlab.app=\"axum\"\n"
	if strings.Count(got, label) != 1 || !strings.Contains(got, label+"FROM debian:trixie-slim\n") || strings.Replace(got, label, "", 1) != string(df) {
		t.Errorf("axum Dockerfile labelled:\n%s", got)
	}
	one := "FROM debian:trixie-slim\nRUN echo \\\n  from here\n"
	if string(labelStages([]byte(one), LabelApp, "x")) != one {
		t.Error("a single-stage Dockerfile changed")
	}
	cont := "FROM a AS b\nRUN echo \\\nFROM nothing\nFROM c\n"
	if want := "FROM a AS b\nRUN echo \\\nFROM nothing\nLABEL k=\"v\"\nFROM c\n"; string(labelStages([]byte(cont), "k", "v")) != want {
		t.Errorf("continuation: %q", labelStages([]byte(cont), "k", "v"))
	}

	// The labelled Dockerfile replaces the tree's in the context.
	var buf bytes.Buffer
	fsys := fstest.MapFS{"Dockerfile": {Data: []byte("old")}, "x.sh": {Data: []byte("#!/bin/sh\n")}}
	if err := TarContext(&buf, fsys, map[string][]byte{"Dockerfile": []byte("new")}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		if h.Name == "Dockerfile" {
			if data, _ := io.ReadAll(tr); string(data) != "new" {
				t.Errorf("Dockerfile %q", data)
			}
		}
	}
	if strings.Join(names, " ") != "Dockerfile x.sh" {
		t.Errorf("context %v", names)
	}
}
