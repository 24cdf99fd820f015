package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
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

// CleanRun removes every member, network and volume labelled with the
// run id. Agents remove their own rules and qdiscs on SIGTERM; force
// removal of a member takes its network namespace (and everything in it)
// with it. A runtime that cannot list its members (runtime.Lister) removes
// the run itself (RemoveRun), its count taken as containers.
func CleanRun(ctx context.Context, d runtime.Runtime, runID string) (Cleaned, error) {
	if runID == "" {
		return Cleaned{}, errors.New("clean: empty run id")
	}
	return clean(ctx, d, map[string]string{engine.LabelRun: runID})
}

// CleanAll removes everything labelled by rttlab, of every run, and every
// wire shaper rule left in the host's tables. With images, the images
// rttlab built are removed too.
//
// It needs a runtime that lists its members by label (runtime.Lister);
// the images go only where the runtime removes images
// (runtime.ImageRemover).
func CleanAll(ctx context.Context, d runtime.Runtime, images bool) (Cleaned, error) {
	c, err := clean(ctx, d, map[string]string{engine.LabelRun: ""})
	n, serr := SweepWireRules(ctx, d, "")
	c.Rules += n
	if err = errors.Join(err, serr); err != nil || !images {
		return c, err
	}
	ir, ok := d.(runtime.ImageRemover)
	if !ok {
		return c, nil
	}
	ids, err := ir.RemoveImages(ctx, map[string]string{engine.LabelApp: ""})
	c.Images = len(ids)
	return c, err
}

// CleanAllBut is CleanAll for every run except those in keep (runs in
// progress): each other run is cleaned by its id, rules included. The
// images stay while a kept run may use them.
func CleanAllBut(ctx context.Context, d runtime.Runtime, images bool, keep map[string]int) (Cleaned, error) {
	if len(keep) == 0 {
		return CleanAll(ctx, d, images)
	}
	runs := map[string]bool{}
	cs, err := listMembers(ctx, d, map[string]string{engine.LabelRun: ""})
	if err != nil {
		return Cleaned{}, err
	}
	for _, ct := range cs {
		runs[ct.Labels[engine.LabelRun]] = true
	}
	if nw, ok := d.(runtime.Network); ok {
		ns, err := nw.ListNetworks(ctx, map[string]string{engine.LabelRun: ""})
		if err != nil {
			return Cleaned{}, err
		}
		for _, n := range ns {
			runs[n.Labels[engine.LabelRun]] = true
		}
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

// listMembers lists the members of d that carry labels; a runtime that
// cannot list them is refused.
func listMembers(ctx context.Context, d runtime.Runtime, labels map[string]string) ([]runtime.Listed, error) {
	l, ok := d.(runtime.Lister)
	if !ok {
		return nil, errors.New("clean: the runtime cannot list its members by label")
	}
	return l.ListMembers(ctx, labels)
}

func clean(ctx context.Context, d runtime.Runtime, filter map[string]string) (Cleaned, error) {
	var c Cleaned
	var errs []error
	if _, ok := d.(runtime.Lister); !ok && filter[engine.LabelRun] != "" {
		n, err := d.RemoveRun(ctx, filter[engine.LabelRun])
		return Cleaned{Containers: n}, err
	}
	cs, err := listMembers(ctx, d, filter)
	if err != nil {
		return c, err
	}
	// Agents and clients first: they share namespaces with the others and
	// stop cleanly (removing their rules) on SIGTERM. A wire shaper that is
	// not running (killed) left its rules in the host's tables: sweep them.
	sweep := map[string]bool{}
	for _, ct := range cs {
		if ct.Labels[engine.LabelRole] == RoleShaper && !ct.Running {
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
	if nw, ok := d.(runtime.Network); ok {
		ns, err := nw.ListNetworks(ctx, filter)
		if err != nil {
			errs = append(errs, err)
		}
		for _, n := range ns {
			if err := nw.RemoveNetwork(ctx, n.ID); err != nil {
				errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
				continue
			}
			c.Networks++
		}
	}
	if vl, ok := d.(runtime.Volumes); ok {
		vs, err := vl.ListVolumes(ctx, filter)
		if err != nil {
			errs = append(errs, err)
		}
		for _, v := range vs {
			if err := vl.RemoveVolume(ctx, v); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v, err))
				continue
			}
			c.Volumes++
		}
	}
	return c, errors.Join(errs...)
}

// removeContainers removes the containers cs, the helpers (agents, wire
// shapers, clients) first, stopped so that they remove their rules; it
// returns how many it removed and an error per container it could not.
func removeContainers(ctx context.Context, d runtime.Members, cs []runtime.Listed) (int, []error) {
	removed := 0
	var errs []error
	for pass := 0; pass < 2; pass++ {
		for _, ct := range cs {
			role := ct.Labels[engine.LabelRole]
			isHelper := role == "agent" || role == RoleShaper || role == "client"
			if (pass == 0) != isHelper {
				continue
			}
			if pass == 0 && ct.Running {
				_ = d.StopMember(ctx, ct.ID, 3*time.Second)
			}
			if err := d.RemoveMember(ctx, ct.ID); err != nil {
				errs = append(errs, fmt.Errorf("container %s: %w", ct.Name, err))
				continue
			}
			removed++
		}
	}
	return removed, errs
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
