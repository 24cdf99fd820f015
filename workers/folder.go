package workers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
)

// PlanFile is the copy of its own plan a workers folder keeps when the
// plan is no built-in one.
const PlanFile = "plan.yaml"

// folderFiles are the files of a workers folder that its runner appends
// to, which OpenFolder trims of a cut last line.
var folderFiles = []string{capacityFile, runsFile, decisionsFile, results.JournalFile}

// CreateFolder creates the results folder of a new study under out
// (results.Create), locked until its Close: its plan (by name when built
// in, else a copy as plan.yaml), then the manifest.
func CreateFolder(out string, plan *Plan, app, version string) (f *results.Folder, err error) {
	now := time.Now()
	f, err = results.Create(out, results.KindWorkers, plan.Name, now)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	planFile := plan.File()
	if _, ok := BuiltinPlan(plan.Name, DefaultLimits(runtime.NumCPU())); ok {
		planFile = plan.Name
	} else if b, err := os.ReadFile(planFile); err == nil {
		planFile = f.Path(PlanFile)
		if err := f.CreateFile(PlanFile, b); err != nil {
			return nil, err
		}
	}
	m := Manifest{Kind: results.KindWorkers, Format: results.Format, Plan: plan, PlanFile: planFile, Seed: plan.Seed, Version: version,
		Started: now.UTC(), Backend: plan.Shaper, App: app}
	if err := f.WriteManifest(m); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenFolder opens a workers results folder to resume it (results.Open):
// locked until its Close, its raw files trimmed of a cut last line.
func OpenFolder(dir string) (*results.Folder, error) {
	return results.Open(dir, results.KindWorkers, nil, folderFiles...)
}

// FolderPlan is a workers results folder's own plan: a built-in one by
// the name its manifest gives, else the copy the folder keeps as
// plan.yaml (whatever folder the command runs from).
func FolderPlan(dir string) (*Plan, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	lim := DefaultLimits(runtime.NumCPU())
	file := m.PlanFile
	if _, ok := BuiltinPlan(file, lim); !ok {
		own := filepath.Join(dir, PlanFile)
		if _, err := os.Stat(own); err == nil {
			file = own
		}
	}
	plan, err := LoadPlan(file, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: the folder's plan: %w", dir, err)
	}
	if m.Plan != nil {
		// The platform it ran, which a plan file does not say.
		plan.Platform, plan.Emulated = m.Plan.Platform, m.Plan.Emulated
	}
	return plan, nil
}

// ReadManifest reads the manifest of a workers results folder.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := capped.ReadFile(filepath.Join(dir, results.ManifestFile), "manifest", results.MaxManifest)
	if err != nil {
		return nil, fmt.Errorf("%s is not a workers results folder: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Kind != results.KindWorkers {
		return nil, fmt.Errorf("%s/manifest.json is not a workers study's manifest", dir)
	}
	return &m, nil
}

// taskIndex is a plan's tasks by name, built once (Plan.Tasks expands
// and shuffles the whole plan on every call).
type taskIndex struct {
	// names is the study's tasks in the order they run: the capacity
	// searches (capacity-1, ...), then the plan's tasks (task-1, ...).
	names   []string
	targets []CapacityTarget
	caps    map[string]int // capacity-N: N-1, its index in targets
	runs    map[string]Task
}

// index names the plan's capacity searches and tasks.
func (p *Plan) index() *taskIndex {
	ix := &taskIndex{targets: p.CapacityTargets(), caps: map[string]int{}, runs: map[string]Task{}}
	for i := range ix.targets {
		name := fmt.Sprintf("capacity-%d", i+1)
		ix.names, ix.caps[name] = append(ix.names, name), i
	}
	for _, t := range p.Tasks() {
		name := fmt.Sprintf("task-%d", t.ID)
		ix.names, ix.runs[name] = append(ix.names, name), t
	}
	return ix
}

// has says whether the folder holds task's capacity or run.
func (f *workersFolder) has(ix *taskIndex, task string) bool {
	if i, ok := ix.caps[task]; ok {
		_, done := f.caps[ix.targets[i].Key]
		return done
	}
	if t, ok := ix.runs[task]; ok {
		return f.done[t.ID]
	}
	return false
}
