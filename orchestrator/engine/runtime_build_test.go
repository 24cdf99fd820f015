package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
)

// buildEngine answers POST /build with the stream of the tag's script (a
// 500 for a tag without one) and image look-ups for the tags in built.
func buildEngine(t *testing.T, scripts map[string][]string, built map[string]string) *dockerd {
	d := newDockerd(t)
	d.handle("POST /build", func(w http.ResponseWriter, r *http.Request) {
		msgs, ok := scripts[r.URL.Query().Get("t")]
		if !ok {
			engineError(w, http.StatusInternalServerError, "Cannot locate specified Dockerfile: Dockerfile")
			return
		}
		jsonStream(msgs...)(w, r)
	})
	d.handle("GET /images/{rest...}", imageInspect(built))
	return d
}

// BuildImage sends the context as the body and the options as the classic
// builder's query, streams the build output to the log and returns the
// built image's id.
func TestBuildImage(t *testing.T) {
	d := buildEngine(t, map[string][]string{
		"rttlab/pg:latest": {
			`{"stream":"Step 1/2 : FROM debian:trixie-slim\n"}`,
			`{"stream":" ---\u003e 0123\n"}`,
			`{"aux":{"ID":"sha256:feed"}}`,
			`{"stream":"Successfully tagged rttlab/pg:latest\n"}`,
		},
	}, map[string]string{"rttlab/pg:latest": "sha256:feed"})
	r := d.runtime()
	var log bytes.Buffer
	res, err := r.BuildImage(context.Background(), strings.NewReader("the context tarball"), BuildOptions{
		Tag:       "rttlab/pg:latest",
		Labels:    map[string]string{LabelApp: "pg"},
		BuildArgs: map[string]string{"PG_MAJOR": "17", "EXTRA": "pgvector"},
		NoCache:   true,
		Log:       &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "sha256:feed" || res.Duration <= 0 {
		t.Errorf("result %+v", res)
	}
	if want := "Step 1/2 : FROM debian:trixie-slim\n ---> 0123\nSuccessfully tagged rttlab/pg:latest\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	req := d.only("POST", "/build")
	if string(req.Body) != "the context tarball" {
		t.Errorf("context %q", req.Body)
	}
	q := req.Query
	if q.Get("t") != "rttlab/pg:latest" || q.Get("nocache") != "1" || q.Get("rm") != "" || q.Get("forcerm") != "1" || q.Get("version") != "1" {
		t.Errorf("build query %v: want the tag, no cache, intermediate containers removed, the classic builder", q)
	}
	var labels, args map[string]string
	json.Unmarshal([]byte(q.Get("labels")), &labels)
	json.Unmarshal([]byte(q.Get("buildargs")), &args)
	if !reflect.DeepEqual(labels, map[string]string{LabelApp: "pg"}) {
		t.Errorf("labels %s", q.Get("labels"))
	}
	// Each argument keeps its own value (a pointer per value).
	if !reflect.DeepEqual(args, map[string]string{"PG_MAJOR": "17", "EXTRA": "pgvector"}) {
		t.Errorf("build args %s", q.Get("buildargs"))
	}
}

// A failing step is a StreamError carrying the output that led to it,
// colour codes removed; the needs-network line the apps' Dockerfiles
// print makes it a skip.
func TestBuildImageFailures(t *testing.T) {
	d := buildEngine(t, map[string][]string{
		"rttlab/aimeos:latest": {
			`{"stream":"Step 2/9 : RUN reach || exit 1\n"}`,
			`{"stream":"\u001b[91maimeos: needs network access to Packagist (repo.packagist.org)\n\u001b[0m"}`,
			`{"errorDetail":{"message":"The command '/bin/sh -c reach || exit 1' returned a non-zero code: 1"},"error":"x"}`,
		},
		"rttlab/untagged:latest": {`{"stream":"Successfully built 0123\n"}`},
	}, nil)
	r := d.runtime()
	ctx := context.Background()

	_, err := r.BuildImage(ctx, strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/aimeos:latest"})
	var se *StreamError
	if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "build rttlab/aimeos:latest: The command") {
		t.Fatalf("failed step: %v", err)
	}
	if want := []string{"Step 2/9 : RUN reach || exit 1", "aimeos: needs network access to Packagist (repo.packagist.org)"}; !reflect.DeepEqual(se.Tail, want) {
		t.Errorf("tail %q, want %q", se.Tail, want)
	}
	if reason, ok := SkipReason(err); !ok || reason != "aimeos: needs network access to Packagist (repo.packagist.org)" {
		t.Errorf("skip reason %q %v", reason, ok)
	}

	if _, err := r.BuildImage(ctx, strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/nodockerfile:latest"}); err == nil ||
		!strings.HasPrefix(err.Error(), "build rttlab/nodockerfile:latest: ") || !strings.Contains(err.Error(), "Cannot locate specified Dockerfile") {
		t.Errorf("refused build: %v", err)
	}
	// A build that ends well but left no image behind is not a success.
	if _, err := r.BuildImage(ctx, strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/untagged:latest"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("build without an image: %v", err)
	}
}

// The engine's stream is read to its end or its first error: a truncated
// stream is an error, text goes to the log as it comes, and the tail
// keeps the last 15 non-blank lines.
func TestReadJSONStream(t *testing.T) {
	var msgs []string
	for i := range 20 {
		msgs = append(msgs, `{"stream":"line `+string(rune('a'+i))+`\n\n"}`)
	}
	var out bytes.Buffer
	tail, err := readJSONStream(strings.NewReader(strings.Join(msgs, "\n")), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(tail) != 15 || tail[0] != "line f" || tail[14] != "line t" {
		t.Errorf("tail %q", tail)
	}
	if strings.Count(out.String(), "\n\n") != 20 {
		t.Errorf("log %q: the stream text is not passed on whole", out.String())
	}
	tail, err = readJSONStream(strings.NewReader(`{"stream":"Step 1/2\n"}{"stream":"trunc`), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "read engine stream: ") || len(tail) != 1 {
		t.Errorf("truncated stream: %q, %v", tail, err)
	}
	// An error with no detail message keeps the plain one.
	_, err = readJSONStream(strings.NewReader(`{"error":"no space left on device"}`), nil)
	if err == nil || err.Error() != "no space left on device" {
		t.Errorf("plain error: %v", err)
	}
}

// stepEngine is an engine whose builds commit the base's step and then
// step 5e5e5e5e5e5e (untagged, as the classic builder leaves it) before
// the stream goes on as tail says; its removal of that image answers the
// conflicts in conflicts first.
func stepEngine(t *testing.T, tail http.HandlerFunc, conflicts ...string) *dockerd {
	d := newDockerd(t)
	steps := []string{
		`{"stream":"Step 1/3 : FROM debian:trixie-slim\n"}`,
		`{"stream":" ---\u003e ba5eba5eba5e\n"}`,
		`{"stream":"Step 2/3 : RUN apt-get install -y cargo\n"}`,
		`{"stream":" ---\u003e Running in c0ffeec0ffee\n"}`,
		`{"stream":"Removing intermediate container c0ffeec0ffee\n"}`,
		`{"stream":" ---\u003e 5e5e5e5e5e5e\n"}`,
		`{"stream":"Step 3/3 : RUN cargo build --release\n"}`,
	}
	d.handle("POST /build", func(w http.ResponseWriter, r *http.Request) {
		jsonStream(steps...)(w, r)
		w.(http.Flusher).Flush()
		tail(w, r)
	})
	d.handle("GET /images/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("rest") {
		case "ba5eba5eba5e/json":
			writeJSON(w, http.StatusOK, image.InspectResponse{ID: "sha256:ba5eba5eba5e00", RepoTags: []string{"debian:trixie-slim"}})
		case "5e5e5e5e5e5e/json":
			writeJSON(w, http.StatusOK, image.InspectResponse{ID: "sha256:5e5e5e5e5e5e00"})
		default:
			engineError(w, http.StatusNotFound, "No such image")
		}
	})
	var mu sync.Mutex
	d.handle("DELETE /images/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(conflicts) > 0 {
			msg := conflicts[0]
			conflicts = conflicts[1:]
			engineError(w, http.StatusConflict, msg)
			return
		}
		writeJSON(w, http.StatusOK, []image.DeleteResponse{{Deleted: r.PathValue("id")}})
	})
	return d
}

// A build that fails removes the image its last step committed, which
// carries neither tag nor label (clean --images could not find it), with
// its untagged parents; it waits while the stopped step's container still
// holds it. A tagged image, or one other images build on, stays.
func TestBuildImageRemovesTheFailedStep(t *testing.T) {
	failing := jsonStream(`{"errorDetail":{"message":"The command '/bin/sh -c cargo build --release' returned a non-zero code: 101"}}`)
	d := stepEngine(t, failing, "conflict: unable to delete 5e5e5e5e5e5e (must be forced) - image is being used by stopped container c0ffeec0ffee")
	r := d.runtime()
	if _, err := r.BuildImage(context.Background(), strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/axum:latest"}); err == nil {
		t.Fatal("a failed step built")
	}
	dels := d.requests("DELETE", "/images/sha256:5e5e5e5e5e5e00")
	if len(dels) != 2 {
		t.Fatalf("removals of the failed step's image: %d, want 2 (one refused while its container stays) (%v)", len(dels), d.paths())
	}
	if q := dels[1].Query; q.Get("force") != "" || q.Get("noprune") != "" {
		t.Errorf("removal %v: want neither forced nor leaving the untagged parents", q)
	}

	// An image other builds start from stays: one try, no wait.
	d = stepEngine(t, failing, "conflict: unable to delete 5e5e5e5e5e5e (cannot be forced) - image has dependent child images")
	r = d.runtime()
	start := time.Now()
	r.BuildImage(context.Background(), strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/axum:latest"})
	if n := len(d.requests("DELETE", "/images/sha256:5e5e5e5e5e5e00")); n != 1 || time.Since(start) > failedStepWait/2 {
		t.Errorf("an image with children: %d removals in %v, want 1 at once", n, time.Since(start))
	}

	// A build that fails at its first step leaves the FROM image alone.
	d = newDockerd(t)
	d.handle("POST /build", jsonStream(`{"stream":"Step 1/3 : FROM debian:trixie-slim\n"}`, `{"stream":" ---\u003e ba5eba5eba5e\n"}`,
		`{"stream":"Step 2/3 : RUN false\n"}`, `{"errorDetail":{"message":"returned a non-zero code: 1"}}`))
	d.handle("GET /images/{rest...}", replyJSON(image.InspectResponse{ID: "sha256:ba5eba5eba5e00", RepoTags: []string{"debian:trixie-slim"}}))
	r = d.runtime()
	r.BuildImage(context.Background(), strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/go:latest"})
	for _, p := range d.paths() {
		if strings.HasPrefix(p, "DELETE ") {
			t.Errorf("a tagged image removed: %v", d.paths())
		}
	}
}

// A build stopped by its caller (Ctrl-C, the build's time limit) removes
// its last step's image too, after its context is done.
func TestBuildImageStoppedRemovesTheLastStep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := stepEngine(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	r := d.runtime()
	// The caller stops while the last step runs.
	stop := &lineWatch{want: func(l string) bool { return strings.HasPrefix(l, "Step 3/3") }, seen: make(chan struct{})}
	go func() { <-stop.seen; cancel() }()
	if _, err := r.BuildImage(ctx, strings.NewReader("ctx"), BuildOptions{Tag: "rttlab/axum:latest", Log: stop}); err == nil {
		t.Fatal("a stopped build built")
	}
	if n := len(d.requests("DELETE", "/images/sha256:5e5e5e5e5e5e00")); n != 1 {
		t.Errorf("removals of the stopped build's last step: %d, want 1 (%v)", n, d.paths())
	}
}
