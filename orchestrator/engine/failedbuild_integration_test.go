package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
)

// dockerfileContext is a build context holding only a Dockerfile.
func dockerfileContext(t *testing.T, df string) *bytes.Reader {
	t.Helper()
	var b bytes.Buffer
	if err := engine.TarContext(&b, fstest.MapFS{}, map[string][]byte{"Dockerfile": []byte(df)}); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b.Bytes())
}

// stepSeen calls stop once the build's output shows a line with prefix.
type stepSeen struct {
	prefix string
	stop   func()
	once   sync.Once
}

func (s *stepSeen) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), s.prefix) {
		s.once.Do(s.stop)
	}
	return len(p), nil
}

// A build that fails, and one stopped while a step runs, leave no
// untagged image on a real engine: the classic builder keeps the last
// committed step's image, which carries no label for clean --images to
// find, and BuildImage removes it.
func TestIntegrationFailedBuildLeavesNoImage(t *testing.T) {
	rt := enginetest.Engine(t)
	ctx := context.Background()
	if _, _, err := engine.EnsureBase(ctx, rt, engine.BaseOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := rt.DanglingImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	nonce := time.Now().UnixNano() // no cache: every step commits anew
	for _, c := range []struct {
		name, last string
		stop       bool
	}{
		{"failed", "RUN exit 3", false},
		{"stopped", "RUN sleep 120", true},
	} {
		df := fmt.Sprintf("FROM %s\nRUN echo %d-%s > /n\n%s\n", engine.BaseImage, nonce, c.name, c.last)
		bctx, cancel := context.WithCancel(ctx)
		o := engine.BuildOptions{Tag: "rttlab-it/" + c.name + ":latest", Labels: map[string]string{engine.LabelApp: c.name}}
		if c.stop {
			o.Log = &stepSeen{prefix: "Step 3/", stop: cancel} // the labels add a step 4
		}
		start := time.Now()
		_, err := rt.BuildImage(bctx, dockerfileContext(t, df), o)
		cancel()
		if err == nil {
			t.Fatalf("%s build built", c.name)
		}
		t.Logf("%s build: %v after %.1f s", c.name, engine.FirstLine(err.Error()), time.Since(start).Seconds())
	}
	after, err := rt.DanglingImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range after {
		if !slices.Contains(before, id) {
			t.Errorf("untagged image left behind: %s", id)
		}
	}
}
