package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
)

// jsonStream writes engine stream messages (build, pull, import) one JSON
// object a line, as the engine does.
func jsonStream(msgs ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for _, m := range msgs {
			fmt.Fprintln(w, m)
		}
	}
}

// imageInspect answers GET /images/{ref}/json for the refs in ids, 404
// for the others.
func imageInspect(ids map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ref, ok := strings.CutSuffix(r.PathValue("rest"), "/json")
		if id, known := ids[ref]; ok && known {
			writeJSON(w, http.StatusOK, image.InspectResponse{ID: id, RepoTags: []string{ref}})
			return
		}
		engineError(w, http.StatusNotFound, "No such image: "+ref)
	}
}

func TestImageID(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /images/{rest...}", imageInspect(map[string]string{"rttlab/postgres:latest": "sha256:abc"}))
	r := d.runtime()
	id, err := r.ImageID(context.Background(), "rttlab/postgres:latest")
	if err != nil || id != "sha256:abc" {
		t.Errorf("ImageID = %q, %v", id, err)
	}
	if _, err := r.ImageID(context.Background(), "rttlab/nope:latest"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "rttlab/nope:latest") {
		t.Errorf("missing image: %v", err)
	}
}

// PullImage reads the whole progress stream: a failure the registry
// reports inside it (after a 200) is an error too.
func TestPullImage(t *testing.T) {
	d := newDockerd(t)
	d.handle("POST /images/create", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("fromImage") {
		case "docker.io/library/debian":
			jsonStream(`{"status":"Pulling from library/debian","id":"trixie-slim"}`,
				`{"status":"Downloading","progressDetail":{"current":1,"total":2}}`,
				`{"status":"Status: Downloaded newer image for debian:trixie-slim"}`)(w, r)
		case "docker.io/library/private":
			jsonStream(`{"status":"Pulling from library/private"}`,
				`{"errorDetail":{"message":"pull access denied for private"},"error":"pull access denied for private"}`)(w, r)
		default:
			engineError(w, http.StatusNotFound, "manifest unknown")
		}
	})
	r := d.runtime()
	ctx := context.Background()
	if err := r.PullImage(ctx, "debian:trixie-slim"); err != nil {
		t.Fatal(err)
	}
	if q := d.requests("POST", "/images/create")[0].Query; q.Get("tag") != "trixie-slim" {
		t.Errorf("pull query %v", q)
	}
	err := r.PullImage(ctx, "private:latest")
	var se *StreamError
	if !errors.As(err, &se) || se.Msg != "pull access denied for private" || !strings.HasPrefix(err.Error(), "pull private:latest: ") {
		t.Errorf("denied in the stream: %v", err)
	}
	if err := r.PullImage(ctx, "nope:1"); err == nil || !cerrdefs.IsNotFound(err) || !strings.HasPrefix(err.Error(), "pull nope:1: ") {
		t.Errorf("unknown image: %v", err)
	}
	if err := r.PullImage(ctx, "Not A Reference"); err == nil {
		t.Error("an invalid reference pulled")
	}
}

// ImportImage sends the root filesystem tarball untouched, tagged ref,
// with bash as the command (debootstrap's tree has no CMD).
func TestImportImage(t *testing.T) {
	d := newDockerd(t)
	d.handle("POST /images/create", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("repo") == "broken:latest" {
			jsonStream(`{"errorDetail":{"message":"archive/tar: invalid tar header"}}`)(w, r)
			return
		}
		jsonStream(`{"status":"sha256:0123"}`)(w, r)
	})
	r := d.runtime()
	rootfs := []byte("a root filesystem tarball")
	if err := r.ImportImage(context.Background(), bytes.NewReader(rootfs), "debian:trixie-slim"); err != nil {
		t.Fatal(err)
	}
	req := d.only("POST", "/images/create")
	if !bytes.Equal(req.Body, rootfs) {
		t.Errorf("imported %q", req.Body)
	}
	q := req.Query
	if q.Get("fromSrc") != "-" || q.Get("repo") != "debian:trixie-slim" || !slices.Equal(q["changes"], []string{`CMD ["bash"]`}) || !strings.Contains(q.Get("message"), "debootstrap") {
		t.Errorf("import query %v", q)
	}
	err := r.ImportImage(context.Background(), bytes.NewReader(rootfs), "broken:latest")
	if err == nil || !strings.HasPrefix(err.Error(), "import broken:latest: archive/tar: invalid tar header") {
		t.Errorf("import failing in the stream: %v", err)
	}
	if err := r.ImportImage(context.Background(), bytes.NewReader(rootfs), "Bad Ref"); err == nil || !strings.HasPrefix(err.Error(), "import Bad Ref: ") {
		t.Errorf("invalid reference: %v", err)
	}
}

func TestRemoveImage(t *testing.T) {
	d := newDockerd(t)
	d.handle("DELETE /images/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("rest") {
		case "gone:latest":
			engineError(w, http.StatusNotFound, "No such image")
		case "0123456789abcdef0123":
			engineError(w, http.StatusConflict, "image is being used by running container")
		default:
			writeJSON(w, http.StatusOK, []image.DeleteResponse{{Untagged: r.PathValue("rest")}})
		}
	})
	r := d.runtime()
	ctx := context.Background()
	if err := r.RemoveImage(ctx, "rttlab/pg:latest"); err != nil {
		t.Fatal(err)
	}
	if q := d.only("DELETE", "/images/rttlab/pg:latest").Query; q.Get("force") != "1" || q.Get("noprune") != "" {
		t.Errorf("remove query %v, want forced, parents pruned", q)
	}
	if err := r.RemoveImage(ctx, "gone:latest"); err != nil {
		t.Errorf("an image already gone: %v", err)
	}
	if err := r.RemoveImage(ctx, "0123456789abcdef0123"); err == nil || !strings.HasPrefix(err.Error(), "remove image 0123456789ab: ") {
		t.Errorf("an image in use: %v", err)
	}
}

// RemoveImages removes rttlab's images and the untagged stages of its
// builds, and leaves alone a user's image that inherited the label by
// building FROM one of them.
func TestRemoveImages(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /images/json", replyJSON([]image.Summary{
		{ID: "sha256:pg", RepoTags: []string{"rttlab/pg:latest"}, Labels: map[string]string{LabelApp: "pg"}},
		{ID: "sha256:stage", RepoTags: []string{"<none>:<none>"}, Labels: map[string]string{LabelApp: "axum"}},
		{ID: "sha256:users", RepoTags: []string{"me/pg-plus:1"}, Labels: map[string]string{LabelApp: "pg"}},
		{ID: "sha256:gone", RepoTags: []string{"rttlab/go:latest"}, Labels: map[string]string{LabelApp: "go"}},
	}))
	d.handle("DELETE /images/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "sha256:gone" {
			engineError(w, http.StatusNotFound, "No such image") // removed meanwhile
			return
		}
		writeJSON(w, http.StatusOK, []image.DeleteResponse{{Deleted: r.PathValue("id")}})
	})
	removed, err := d.runtime().RemoveImages(context.Background(), map[string]string{LabelApp: ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:pg", "sha256:stage", "sha256:gone"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if len(d.requests("DELETE", "/images/sha256:users")) != 0 {
		t.Error("a user's image was removed")
	}
	if got := d.only("GET", "/images/json").labelFilter(t); !reflect.DeepEqual(got, map[string]bool{LabelApp: true}) {
		t.Errorf("label filter %v", got)
	}
}

func TestRemoveImagesFailures(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /images/json", replyJSON([]image.Summary{
		{ID: "sha256:a", RepoTags: []string{"rttlab/a:latest"}, Labels: map[string]string{LabelApp: "a"}},
		{ID: "sha256:busy", RepoTags: []string{"rttlab/busy:latest"}, Labels: map[string]string{LabelApp: "busy"}},
		{ID: "sha256:c", RepoTags: []string{"rttlab/c:latest"}, Labels: map[string]string{LabelApp: "c"}},
	}))
	d.handle("DELETE /images/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "sha256:busy" {
			engineError(w, http.StatusConflict, "image is being used by running container 0123")
			return
		}
		writeJSON(w, http.StatusOK, []image.DeleteResponse{{Deleted: r.PathValue("id")}})
	})
	removed, err := d.runtime().RemoveImages(context.Background(), map[string]string{LabelApp: ""})
	if err == nil || !strings.HasPrefix(err.Error(), "remove image sha256:busy: ") || !slices.Equal(removed, []string{"sha256:a"}) {
		t.Errorf("removed %v, %v: want what went before the failure and the failure", removed, err)
	}

	d = newDockerd(t)
	d.handle("GET /images/json", replyError(http.StatusInternalServerError, "boom"))
	if _, err := d.runtime().RemoveImages(context.Background(), nil); err == nil || !strings.HasPrefix(err.Error(), "list images: ") {
		t.Errorf("list failure: %v", err)
	}
}

func TestNetworks(t *testing.T) {
	d := newDockerd(t)
	d.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
		var req network.CreateRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.Name == "taken" {
			engineError(w, http.StatusConflict, "network with name taken already exists")
			return
		}
		writeJSON(w, http.StatusCreated, network.CreateResponse{ID: "net-" + req.Name})
	})
	d.handle("GET /networks", replyJSON([]network.Summary{{ID: "n1", Name: "rttlab-abc", Labels: map[string]string{LabelRun: "abc"}}}))
	r := d.runtime()
	ctx := context.Background()
	id, err := r.CreateNetwork(ctx, "rttlab-abc", map[string]string{LabelRun: "abc"})
	if err != nil || id != "net-rttlab-abc" {
		t.Fatalf("CreateNetwork = %q, %v", id, err)
	}
	var req network.CreateRequest
	d.requests("POST", "/networks/create")[0].decode(t, &req)
	if req.Name != "rttlab-abc" || req.Driver != "bridge" || !reflect.DeepEqual(req.Labels, map[string]string{LabelRun: "abc"}) {
		t.Errorf("create network %+v", req)
	}
	if _, err := r.CreateNetwork(ctx, "taken", nil); err == nil || !strings.HasPrefix(err.Error(), "create network taken: ") || !cerrdefs.IsConflict(err) {
		t.Errorf("name taken: %v", err)
	}
	ns, err := r.ListNetworks(ctx, map[string]string{LabelRun: "abc"})
	if err != nil || len(ns) != 1 || ns[0].Name != "rttlab-abc" {
		t.Fatalf("ListNetworks = %+v, %v", ns, err)
	}
	if got := d.only("GET", "/networks").labelFilter(t); !reflect.DeepEqual(got, map[string]bool{"io.rttlab.run=abc": true}) {
		t.Errorf("label filter %v", got)
	}

	d = newDockerd(t)
	d.handle("GET /networks", replyError(http.StatusInternalServerError, "boom"))
	if _, err := d.runtime().ListNetworks(ctx, nil); err == nil || !strings.HasPrefix(err.Error(), "list networks: ") {
		t.Errorf("list failure: %v", err)
	}
}

func TestVolumes(t *testing.T) {
	d := newDockerd(t)
	d.handle("GET /volumes", replyJSON(volume.ListResponse{Volumes: []*volume.Volume{{Name: "pgdata-abc"}, {Name: "0123anon"}}}))
	d.handle("DELETE /volumes/{name}", replyNoContent)
	r := d.runtime()
	ctx := context.Background()
	names, err := r.ListVolumes(ctx, map[string]string{LabelRun: "abc"})
	if err != nil || !slices.Equal(names, []string{"pgdata-abc", "0123anon"}) {
		t.Fatalf("ListVolumes = %v, %v", names, err)
	}
	if got := d.only("GET", "/volumes").labelFilter(t); !reflect.DeepEqual(got, map[string]bool{"io.rttlab.run=abc": true}) {
		t.Errorf("label filter %v", got)
	}
	if err := r.RemoveVolume(ctx, "pgdata-abc"); err != nil {
		t.Fatal(err)
	}
	if q := d.only("DELETE", "/volumes/pgdata-abc").Query; q.Get("force") != "1" {
		t.Errorf("remove volume %v, want forced", q)
	}

	d = newDockerd(t)
	d.handle("GET /volumes", replyError(http.StatusInternalServerError, "boom"))
	if _, err := d.runtime().ListVolumes(ctx, nil); err == nil || !strings.HasPrefix(err.Error(), "list volumes: ") {
		t.Errorf("list failure: %v", err)
	}
}
