package rtt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/rtt/report"
)

// TraceTypes lists, sorted, the request types a trace of the app measures
// (`rttlab trace`, and a run's trace): its routes (a per-N route as
// /path?n=5), or its mix's types. It needs no engine.
func TraceTypes(t apps.Target) ([]string, error) {
	mix, err := shaping.MixFor(t.Meta)
	if err != nil {
		return nil, err
	}
	reqs := shaping.TraceRequests(t, mix, 1, 5, 0)
	out := make([]string, 0, len(reqs))
	for k := range reqs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// CheckBudgets refuses a budget that applies to none of the app's request
// types, naming the types it has.
func CheckBudgets(t apps.Target, b apps.Budgets) error {
	if len(b) == 0 {
		return nil
	}
	types, err := TraceTypes(t)
	if err != nil {
		return err
	}
	if un := report.UnservedBudgets(b, types); len(un) > 0 {
		return fmt.Errorf("budget %s: %s does not serve it (its request types: %s)", un[0], t.Name, strings.Join(types, ", "))
	}
	return nil
}

// AppBudgets returns the budgets of a plan's app: its app.yaml's, with
// the plan entry's winning for a key both name.
func AppBudgets(t apps.Target, a PlanApp) apps.Budgets {
	return t.Meta.Budgets.Merge(a.Budgets)
}

// ValidatePlanBudgets checks every app's budgets (app.yaml's and the
// plan's) against the request types its trace measures, before anything
// starts. A plan's budget that applies to none is named at its line of
// the plan's file (the plan's name for a built-in plan).
func ValidatePlanBudgets(p *Plan, all map[string]*apps.Meta) error {
	for _, a := range p.Apps {
		t, err := apps.Resolve(all, a.Name)
		if err != nil {
			return err
		}
		if err := CheckBudgets(t, t.Meta.Budgets); err != nil {
			return fmt.Errorf("apps/%s/app.yaml: %w", t.Meta.Name, err)
		}
		if len(a.Budgets) == 0 {
			continue
		}
		types, err := TraceTypes(t)
		if err != nil {
			return err
		}
		if un := report.UnservedBudgets(a.Budgets, types); len(un) > 0 {
			return p.Place(planfile.At("apps[name="+a.Name+"].budgets["+un[0]+"]",
				"app %s: budget %s: %s does not serve it (its request types: %s)", a.Name, un[0], t.Name, strings.Join(types, ", ")))
		}
	}
	return nil
}
