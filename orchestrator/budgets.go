package orchestrator

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/results"
)

// TraceTypes lists, sorted, the request types a trace of the app measures
// (`rttlab trace`, and a run's trace): its routes (a per-N route as
// /path?n=5), or its mix's types. It needs no engine.
func TraceTypes(t apps.Target) ([]string, error) {
	mix, err := MixFor(t.Meta)
	if err != nil {
		return nil, err
	}
	reqs := TraceRequests(t, mix, 1, 5, 0)
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
	if un := results.UnservedBudgets(b, types); len(un) > 0 {
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
// file (the plan file; "" for a built-in plan).
func ValidatePlanBudgets(p *Plan, all map[string]*apps.Meta, file string) error {
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
		un := results.UnservedBudgets(a.Budgets, types)
		if len(un) == 0 {
			continue
		}
		what := fmt.Sprintf("app %s: budget %s: %s does not serve it (its request types: %s)", a.Name, un[0], t.Name, strings.Join(types, ", "))
		switch line := planBudgetLine(file, a.Name, un[0]); {
		case line > 0:
			return fmt.Errorf("%s:%d: %s", file, line, what)
		case file != "":
			return fmt.Errorf("%s: %s", file, what)
		}
		return fmt.Errorf("plan %s: %s", p.Name, what)
	}
	return nil
}

// planBudgetLine finds the line of key under the budgets of app in a plan
// file; 0 when it cannot.
func planBudgetLine(file, app, key string) int {
	if file == "" {
		return 0
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	b := mappingValue(planAppEntry(data, app), "budgets")
	if b == nil || b.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(b.Content); i += 2 {
		if strings.TrimSpace(b.Content[i].Value) == key {
			return b.Content[i].Line
		}
	}
	return 0
}

// mappingValue returns the value of key in a YAML mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
