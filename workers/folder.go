package workers

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
)

// CreateFolder creates the results folder of a new study under out: its
// plan (by name when built in, else a copy as plan.yaml), the manifest,
// and the folder's lock, which unlock releases.
func CreateFolder(out string, plan *Plan, app, version string) (dir string, unlock func() error, err error) {
	dir = filepath.Join(out, fmt.Sprintf("%s-%s", time.Now().Format("20060102T150405"), plan.Name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	planFile := plan.File()
	if _, ok := BuiltinPlan(plan.Name, DefaultLimits(runtime.NumCPU())); ok {
		planFile = plan.Name
	} else if b, err := os.ReadFile(planFile); err == nil {
		planFile = filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(planFile, b, 0o644); err != nil {
			return "", nil, err
		}
	}
	m := Manifest{Kind: results.KindWorkers, Format: results.Format, Plan: plan, PlanFile: planFile, Seed: plan.Seed, Version: version,
		Started: time.Now().UTC(), Backend: plan.Shaper, App: app}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, results.ManifestFile), append(b, '\n'), 0o644); err != nil {
		return "", nil, err
	}
	unlock, err = results.LockDir(dir)
	if err != nil {
		return "", nil, err
	}
	return dir, unlock, nil
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
		own := filepath.Join(dir, "plan.yaml")
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
	b, err := capped.ReadFile(filepath.Join(dir, results.ManifestFile), "manifest", 16<<20)
	if err != nil {
		return nil, fmt.Errorf("%s is not a workers results folder: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Kind != results.KindWorkers {
		return nil, fmt.Errorf("%s/manifest.json is not a workers study's manifest", dir)
	}
	return &m, nil
}

// Study is the worker study as the commands reach it (results.Study).
type Study struct{}

func (Study) Kind() string { return results.KindWorkers }

// Report derives the folder's summary and plots under its own plan
// (ReportWorkers).
func (Study) Report(dir string, _ io.Writer) ([]string, error) {
	plan, err := FolderPlan(dir)
	if err != nil {
		return nil, err
	}
	return ReportWorkers(dir, plan)
}

// Compare: the worker study has none.
func (Study) Compare(dirA, dirB string) (string, error) {
	return "", &results.NoCompareError{Msg: fmt.Sprintf("%s and %s are worker studies' folders: compare takes two folders of rttlab run or of rttlab place; read each worker study's summary.md", dirA, dirB)}
}

// Digest is the folder's summary.md, whole.
func (Study) Digest(dir string) (string, error) { return results.ReadSummaryMD(dir) }

// Tasks is the folder's plan's tasks (Plan.taskNames), each done when
// the folder holds its capacity or run.
func (Study) Tasks(dir string) ([]results.TaskState, error) {
	plan, err := FolderPlan(dir)
	if err != nil {
		return nil, err
	}
	f, err := readWorkersFolder(dir)
	if err != nil {
		return nil, err
	}
	var out []results.TaskState
	for _, t := range plan.taskNames() {
		out = append(out, results.TaskState{Name: t, Done: f.has(plan, t)})
	}
	return out, nil
}

// taskNames is the study's tasks in the order they run: the capacity
// searches (capacity-1, ...), then the plan's tasks (task-1, ...).
func (p *Plan) taskNames() []string {
	var out []string
	for i := range p.CapacityTargets() {
		out = append(out, fmt.Sprintf("capacity-%d", i+1))
	}
	for _, t := range p.Tasks() {
		out = append(out, fmt.Sprintf("task-%d", t.ID))
	}
	return out
}

// has says whether the folder holds task's capacity or run.
func (f *workersFolder) has(p *Plan, task string) bool {
	if ct, _, ok := p.capacityTask(task); ok {
		_, done := f.caps[ct.Key]
		return done
	}
	if t, ok := p.planTask(task); ok {
		return f.done[t.ID]
	}
	return false
}

// capacityTask is the capacity target a capacity-N task searches, and N.
func (p *Plan) capacityTask(task string) (CapacityTarget, int, bool) {
	var i int
	targets := p.CapacityTargets()
	if _, err := fmt.Sscanf(task, "capacity-%d", &i); err != nil || i < 1 || i > len(targets) {
		return CapacityTarget{}, 0, false
	}
	return targets[i-1], i, true
}

// planTask is the plan's task a task-N names.
func (p *Plan) planTask(task string) (Task, bool) {
	var id int
	if _, err := fmt.Sscanf(task, "task-%d", &id); err != nil {
		return Task{}, false
	}
	for _, t := range p.Tasks() {
		if t.ID == id {
			return t, true
		}
	}
	return Task{}, false
}
