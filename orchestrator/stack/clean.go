package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

// ErrCleanup marks a run whose containers, networks or volumes could not
// all be removed: something of it is left on the engine.
var ErrCleanup = errors.New("cleanup failed")

// Cleaned counts what a clean removed.
type Cleaned struct {
	Containers int
	Networks   int
	Volumes    int
	Images     int
	Rules      int // wire shaper rules swept from the host's tables
}

func (c Cleaned) String() string {
	s := fmt.Sprintf("%d container(s), %d network(s), %d volume(s)", c.Containers, c.Networks, c.Volumes)
	if c.Rules > 0 {
		s += fmt.Sprintf(", %d shaping rule(s)", c.Rules)
	}
	if c.Images > 0 {
		s += fmt.Sprintf(", %d image(s)", c.Images)
	}
	return s
}

// CleanRun removes every container, network and volume labelled with the
// run id. Agents remove their own rules and qdiscs on SIGTERM; force
// removal of a container takes its network namespace (and everything in
// it) with it.
func CleanRun(ctx context.Context, d engine.Docker, runID string) (Cleaned, error) {
	if runID == "" {
		return Cleaned{}, errors.New("clean: empty run id")
	}
	return clean(ctx, d, map[string]string{engine.LabelRun: runID})
}

// CleanAll removes everything labelled by rttlab, of every run, and every
// wire shaper rule left in the host's tables. With images, the images
// rttlab built are removed too.
func CleanAll(ctx context.Context, d engine.Docker, images bool) (Cleaned, error) {
	c, err := clean(ctx, d, map[string]string{engine.LabelRun: ""})
	n, serr := SweepWireRules(ctx, d, "")
	c.Rules += n
	if err = errors.Join(err, serr); err != nil || !images {
		return c, err
	}
	ids, err := d.RemoveImages(ctx, map[string]string{engine.LabelApp: ""})
	c.Images = len(ids)
	return c, err
}

// CleanAllBut is CleanAll for every run except those in keep (runs in
// progress): each other run is cleaned by its id, rules included. The
// images stay while a kept run may use them.
func CleanAllBut(ctx context.Context, d engine.Docker, images bool, keep map[string]int) (Cleaned, error) {
	if len(keep) == 0 {
		return CleanAll(ctx, d, images)
	}
	runs := map[string]bool{}
	cs, err := d.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		return Cleaned{}, err
	}
	for _, ct := range cs {
		runs[ct.Labels[engine.LabelRun]] = true
	}
	ns, err := d.ListNetworks(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		return Cleaned{}, err
	}
	for _, n := range ns {
		runs[n.Labels[engine.LabelRun]] = true
	}
	var total Cleaned
	var errs []error
	for run := range runs {
		if _, live := keep[run]; live || run == "" {
			continue
		}
		c, err := CleanRun(ctx, d, run)
		n, serr := SweepWireRules(ctx, d, run)
		c.Rules += n
		total.add(c)
		errs = append(errs, err, serr)
	}
	return total, errors.Join(errs...)
}

func (c *Cleaned) add(o Cleaned) {
	c.Containers += o.Containers
	c.Networks += o.Networks
	c.Volumes += o.Volumes
	c.Rules += o.Rules
	c.Images += o.Images
}

func clean(ctx context.Context, d engine.Docker, filter map[string]string) (Cleaned, error) {
	var c Cleaned
	var errs []error
	cs, err := d.ListContainers(ctx, filter)
	if err != nil {
		return c, err
	}
	// Agents and clients first: they share namespaces with the others and
	// stop cleanly (removing their rules) on SIGTERM. A wire shaper that is
	// not running (killed) left its rules in the host's tables: sweep them.
	sweep := map[string]bool{}
	for _, ct := range cs {
		if ct.Labels[engine.LabelRole] == RoleShaper && ct.State != "running" {
			sweep[ct.Labels[engine.LabelRun]] = true
		}
	}
	c.Containers, errs = removeContainers(ctx, d, cs)
	for run := range sweep {
		n, err := SweepWireRules(ctx, d, run)
		c.Rules += n
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", run, err))
		}
	}
	ns, err := d.ListNetworks(ctx, filter)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range ns {
		if err := d.RemoveNetwork(ctx, n.ID); err != nil {
			errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
			continue
		}
		c.Networks++
	}
	vs, err := d.ListVolumes(ctx, filter)
	if err != nil {
		errs = append(errs, err)
	}
	for _, v := range vs {
		if err := d.RemoveVolume(ctx, v); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v, err))
			continue
		}
		c.Volumes++
	}
	return c, errors.Join(errs...)
}

// removeContainers removes the containers cs, the helpers (agents, wire
// shapers, clients) first, stopped so that they remove their rules; it
// returns how many it removed and an error per container it could not.
func removeContainers(ctx context.Context, d engine.Docker, cs []container.Summary) (int, []error) {
	removed := 0
	var errs []error
	for pass := 0; pass < 2; pass++ {
		for _, ct := range cs {
			role := ct.Labels[engine.LabelRole]
			isHelper := role == "agent" || role == RoleShaper || role == "client"
			if (pass == 0) != isHelper {
				continue
			}
			if pass == 0 && ct.State == "running" {
				_ = d.StopContainer(ctx, ct.ID, 3*time.Second)
			}
			if err := d.RemoveContainer(ctx, ct.ID); err != nil {
				errs = append(errs, fmt.Errorf("container %s: %w", containerName(ct), err))
				continue
			}
			removed++
		}
	}
	return removed, errs
}

func containerName(ct container.Summary) string {
	if len(ct.Names) > 0 {
		return strings.TrimPrefix(ct.Names[0], "/")
	}
	return engine.ShortID(ct.ID)
}

// CleanupError reports what the removal of a run's objects left behind.
// Whatever is left carries the run's label io.rttlab.run=RunID.
type CleanupError struct {
	RunID string
	Err   error // one error per object that could not be removed
}

func (e *CleanupError) Error() string {
	return fmt.Sprintf("run %s: could not remove everything: %s", e.RunID, strings.ReplaceAll(e.Err.Error(), "\n", "; "))
}

func (e *CleanupError) Unwrap() error { return e.Err }
