package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/docker/docker/client"
)

func TestLabelArgs(t *testing.T) {
	args := labelArgs(map[string]string{LabelRun: "abc", LabelStack: ""})
	got := args.Get("label")
	want := map[string]bool{"io.rttlab.run=abc": true, "io.rttlab.stack": true}
	if len(got) != 2 {
		t.Fatalf("labels %v", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("unexpected label filter %q in %v", g, got)
		}
	}
	if labelArgs(nil).Len() != 0 {
		t.Fatal("nil filter should be empty")
	}
}

func TestTarContextDeterministic(t *testing.T) {
	fsys := fstest.MapFS{
		"Dockerfile":     {Data: []byte("FROM debian:trixie-slim\n")},
		"entrypoint.sh":  {Data: []byte("#!/bin/sh\n")},
		"main.go":        {Data: []byte("package main\n")},
		"sql/schema.sql": {Data: []byte("select 1;\n")},
	}
	var a, b bytes.Buffer
	if err := TarContext(&a, fsys, map[string][]byte{"feed": []byte("bin")}); err != nil {
		t.Fatal(err)
	}
	if err := TarContext(&b, fsys, map[string][]byte{"feed": []byte("bin")}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same context gave different tar bytes (build cache would miss)")
	}
	tr := tar.NewReader(&a)
	modes := map[string]int64{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
	}
	if _, ok := modes["main.go"]; ok {
		t.Error("host-built Go source should not be in the context")
	}
	if modes["entrypoint.sh"] != 0o755 || modes["feed"] != 0o755 || modes["Dockerfile"] != 0o644 {
		t.Errorf("modes %v", modes)
	}
	if _, ok := modes["sql/"]; !ok {
		t.Errorf("directory entry missing: %v", modes)
	}
}

func TestReadJSONStreamError(t *testing.T) {
	stream := `{"stream":"Step 1/3 : FROM debian:trixie-slim\n"}
{"stream":"Step 2/3 : RUN apt-get install nope\n"}
{"stream":"E: Unable to locate package nope\n"}
{"errorDetail":{"message":"The command '/bin/sh -c apt-get install nope' returned a non-zero code: 100"},"error":"x"}
`
	_, err := readJSONStream(strings.NewReader(stream), nil)
	var se *StreamError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want StreamError", err)
	}
	msg := err.Error()
	for _, want := range []string{"non-zero code: 100", "Unable to locate package nope", "Step 2/3"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

func TestSkipReason(t *testing.T) {
	stream := `{"stream":"Step 2/15 : RUN if ! reach; then echo 'aimeos: needs network access to Packagist (repo.packagist.org) to install the shop; build it on a connected host' >\u00262; exit 1; fi\n"}
{"stream":"\u001b[91maimeos: needs network access to Packagist (repo.packagist.org) to install the shop; build it on a connected host\n\u001b[0m"}
{"errorDetail":{"message":"The command '/bin/sh -c if ! reach; then echo 'aimeos: needs network access to Packagist' >\u00262; exit 1; fi' returned a non-zero code: 1"}}
`
	_, err := readJSONStream(strings.NewReader(stream), nil)
	reason, ok := SkipReason(err)
	if !ok || reason != "aimeos: needs network access to Packagist (repo.packagist.org) to install the shop; build it on a connected host" {
		t.Fatalf("reason %q ok %v", reason, ok)
	}
	if _, ok := SkipReason(errors.New("other")); ok {
		t.Fatal("a plain error is not a skip")
	}
}

// The engine's 404 means "already gone" for removals and ErrNotFound for
// an image look-up; any other failure is an error. The engine here is an
// HTTP stand-in that answers 404 for names starting with "gone".
func TestNotFoundFromEngine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/gone") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"No such object"}`)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"message":"device or resource busy"}`)
	}))
	defer srv.Close()
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	r := &Runtime{cli: cli}
	ctx := context.Background()
	for name, f := range map[string]func(id string) error{
		"container": func(id string) error { return r.RemoveContainer(ctx, id) },
		"stop":      func(id string) error { return r.StopContainer(ctx, id, 0) },
		"network":   func(id string) error { return r.RemoveNetwork(ctx, id) },
		"volume":    func(id string) error { return r.RemoveVolume(ctx, id) },
	} {
		if err := f("gone1"); err != nil {
			t.Errorf("%s already gone: %v", name, err)
		}
		if err := f("busy1"); err == nil || !strings.Contains(err.Error(), "busy") {
			t.Errorf("%s busy: %v", name, err)
		}
	}
	if _, err := r.ImageID(ctx, "gone/app:latest"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing image: %v, want ErrNotFound", err)
	}
	if _, err := r.ImageID(ctx, "busy/app:latest"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("engine failure on image look-up: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("abcdef", 3); got != "abc..." {
		t.Errorf("truncate %q", got)
	}
	if got := Truncate("åäö", 3); got != "åäö" {
		t.Errorf("a string of n runes is kept whole: %q", got)
	}
}

// An image build of a platform under emulation gets five times the
// native limit (an emulated Rust build outgrew 30 minutes here); the
// engine's own platform, named or not, keeps it.
func TestBuildLimit(t *testing.T) {
	own := Platform{OS: "linux", Arch: "a", EngineArch: "a"}
	other := Platform{OS: "linux", Arch: "b", EngineArch: "a"}
	for _, c := range []struct {
		p    Platform
		want time.Duration
	}{
		{Platform{}, longCall},
		{own, longCall},
		{other, 5 * longCall},
	} {
		if got := buildLimit(BuildOptions{Platform: c.p}); got != c.want {
			t.Errorf("%+v: %v, want %v", c.p, got, c.want)
		}
	}
}
