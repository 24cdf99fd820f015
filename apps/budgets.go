package apps

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Budgets are round-trip budgets: the most database round trips one
// request of a type may take. A key names a request type as the trace
// names it: a route path (/feed), a per-N route with its query
// (/serial?n=5, or just /serial, which covers it), or a mix's request
// type (issues-list). A value is a whole number, 0 or more.
//
// In app.yaml and in a plan's app entry they are a mapping:
//
//	budgets:
//	  /feed: 3
//	  /feed-naive: 12
type Budgets map[string]int

// BudgetError is a malformed budget in a YAML file, at a line of it.
type BudgetError struct {
	Line int
	Msg  string
}

// Error reads "line N: what" as the YAML decoder's errors do, so that the
// plan's and app.yaml's error reporting turn it into "file:N: what".
func (e *BudgetError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// UnmarshalYAML reads a mapping of request type to round trips and
// refuses, at the offending line, a value that is not a whole number, a
// negative one, an empty key and a key given twice.
func (b *Budgets) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &BudgetError{n.Line, "budgets must be a mapping of request type to round trips per request, e.g. {/feed: 3, /feed-naive: 12}"}
	}
	out := Budgets{}
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := strings.TrimSpace(k.Value)
		if k.Kind != yaml.ScalarNode || key == "" {
			return &BudgetError{k.Line, "a budget has no route: write ROUTE: N, e.g. /feed: 3"}
		}
		if l, dup := lines[key]; dup {
			return &BudgetError{k.Line, fmt.Sprintf("the budget for %s is given twice (lines %d and %d): keep one", key, l, k.Line)}
		}
		if v.Kind != yaml.ScalarNode {
			return &BudgetError{v.Line, fmt.Sprintf("budget %s: give a whole number of round trips per request, e.g. %s: 3", key, key)}
		}
		max, err := budgetValue(key, v.Value)
		if err != nil {
			return &BudgetError{v.Line, err.Error() + fmt.Sprintf(" (write %s: 3)", key)}
		}
		lines[key] = k.Line
		out[key] = max
	}
	*b = out
	return nil
}

// budgetValue parses the round trips of one budget.
func budgetValue(key, s string) (int, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		if _, err := strconv.Atoi(s); err == nil {
			return 0, fmt.Errorf("budget %s: %s is negative: a budget is 0 or more round trips per request", key, s)
		}
	}
	v, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return 0, fmt.Errorf("budget %s: %q is not a whole number of round trips", key, s)
	}
	return int(v), nil
}

// ParseBudgets parses the values of --budget flags: each a comma list of
// ROUTE=N (the last '=' separates, so /serial?n=5=5 is a route with its
// query). A route given twice, an empty route, a value that is not a
// whole number or a negative one is refused with the fix in the message.
func ParseBudgets(specs []string) (Budgets, error) {
	out := Budgets{}
	for _, spec := range specs {
		items := strings.Split(spec, ",")
		for _, it := range items {
			it = strings.TrimSpace(it)
			if it == "" {
				if len(items) == 1 {
					return nil, fmt.Errorf("--budget is empty: write ROUTE=N[,ROUTE=N...], e.g. /feed=3,/feed-naive=12")
				}
				return nil, fmt.Errorf("--budget %q has an empty item: write ROUTE=N[,ROUTE=N...], e.g. /feed=3,/feed-naive=12", spec)
			}
			i := strings.LastIndexByte(it, '=')
			if i < 0 {
				return nil, fmt.Errorf("budget %q has no =N: write ROUTE=N, e.g. %s=3", it, it)
			}
			key, val := strings.TrimSpace(it[:i]), it[i+1:]
			if key == "" {
				return nil, fmt.Errorf("budget %q has no route: write ROUTE=N, e.g. /feed%s", it, it)
			}
			max, err := budgetValue(key, val)
			if err != nil {
				return nil, fmt.Errorf("%v (write %s=3)", err, key)
			}
			if old, dup := out[key]; dup {
				return nil, fmt.Errorf("the budget for %s is given twice (%d and %d): keep one", key, old, max)
			}
			out[key] = max
		}
	}
	return out, nil
}

// Merge returns b with over's budgets added, over's winning for a key both
// name. Either may be nil.
func (b Budgets) Merge(over Budgets) Budgets {
	out := Budgets{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// Keys returns the budget keys, sorted.
func (b Budgets) Keys() []string {
	out := make([]string, 0, len(b))
	for k := range b {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String renders the budgets as a --budget value (sorted), e.g.
// "/feed=3,/feed-naive=12".
func (b Budgets) String() string {
	var parts []string
	for _, k := range b.Keys() {
		parts = append(parts, fmt.Sprintf("%s=%d", k, b[k]))
	}
	return strings.Join(parts, ",")
}

// validateBudgets checks an app's budgets against its routes: a key's
// path (before any '?') must be a route. An app driven by a mix names its
// request types in Go code, so its keys are checked where the mix is
// known (before anything starts).
func (m *Meta) validateBudgets(where string) error {
	for _, k := range m.Budgets.Keys() {
		if m.Budgets[k] < 0 {
			return fmt.Errorf("%s: budget %s: %d is negative: a budget is 0 or more round trips per request", where, k, m.Budgets[k])
		}
		if m.Mix != "" {
			continue
		}
		path, _, _ := strings.Cut(k, "?")
		if _, ok := m.Route(path); !ok {
			return fmt.Errorf("%s: budget %s: %s does not serve it (routes: %s)", where, k, m.Name, strings.Join(m.RoutePaths(), ", "))
		}
	}
	return nil
}
