package workers

import "testing"

// BenchmarkTaskLookup is what the task loop asks the runner before its
// first task over the built-in plan (its capacity searches and 2,520
// tasks, an empty folder): the task list once, then whether each is done.
func BenchmarkTaskLookup(b *testing.B) {
	plan, _ := BuiltinPlan(PlanWorkers, testLimits)
	for b.Loop() {
		r := &Runner{Plan: plan, folder: &workersFolder{caps: map[CapacityKey]float64{}, done: map[int]bool{}}}
		for _, t := range r.Tasks() {
			if r.Done(t) {
				b.Fatal(t, "done in an empty folder")
			}
		}
	}
}
