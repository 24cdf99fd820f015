package runtime

import "fmt"

// Check is one line of a doctor's report on what a runtime can do: what
// was found and, when it is not OK, the fix. A failed Required check
// means the runtime cannot run a study.
type Check struct {
	Name     string
	OK       bool
	Required bool
	Detail   string // what was found
	Fix      string // what to do when not OK
}

// String is the check's line: OK, WARN (not OK, not required) or FAIL,
// its name, what was found and the fix.
func (c Check) String() string {
	status := "OK  "
	switch {
	case !c.OK && c.Required:
		status = "FAIL"
	case !c.OK:
		status = "WARN"
	}
	s := fmt.Sprintf("%s %-22s %s", status, c.Name, c.Detail)
	if !c.OK && c.Fix != "" {
		s += " — fix: " + c.Fix
	}
	return s
}
