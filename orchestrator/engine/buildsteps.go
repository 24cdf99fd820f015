package engine

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/rttlab/rttlab/internal/conc"
)

// stepImages follows a classic build's output for the image its last
// step committed: the builder prints " ---> <id>" after each step.
type stepImages struct{ last string }

var stepImageRE = regexp.MustCompile(`(?m)^ ---> ([0-9a-f]{12,64})\s*$`)

func (s *stepImages) Write(p []byte) (int, error) {
	if m := stepImageRE.FindAllSubmatch(p, -1); len(m) > 0 {
		s.last = string(m[len(m)-1][1])
	}
	return len(p), nil
}

// failedStepWait bounds how long removeFailedStep waits for the engine
// to remove the stopped step's container, which holds the image.
var failedStepWait = 20 * time.Second

// removeFailedStep removes what a failed or stopped build left behind:
// the image of its last committed step, untagged and without the build's
// labels (they go on its last step only), so that clean --images cannot
// find it; the untagged steps under it that no other image uses go with
// it. A tagged image (a FROM line's) and one other images build on stay.
// It runs after the build's context is done too (Ctrl-C, the build's
// time limit).
func (r *Runtime) removeFailedStep(ctx context.Context, id string) {
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failedStepWait)
	defer cancel()
	for {
		img, err := r.inspectImage(ctx, id)
		if err != nil || len(img.RepoTags) > 0 {
			return
		}
		_, err = r.cli.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		// Images built on it (an earlier build's, it was the cache) keep it
		// for good, as they should.
		if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "child images") {
			return
		}
		// A container of the stopped step uses it for a moment, until the
		// engine removes that; anything else is not for waiting.
		if !cerrdefs.IsConflict(err) || conc.Sleep(ctx, 250*time.Millisecond) != nil {
			slog.Warn("the failed build's last step image stays", "image", ShortID(img.ID), "err", FirstLine(err.Error()))
			return
		}
	}
}
