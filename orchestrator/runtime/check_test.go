package runtime

import "testing"

// A check's line says OK, WARN or FAIL, what was found, and the fix only
// when it is not OK.
func TestCheckString(t *testing.T) {
	for _, c := range []struct {
		c    Check
		want string
	}{
		{Check{Name: "cluster", OK: true, Required: true, Detail: "v1.35.4", Fix: "start it"}, "OK   cluster                v1.35.4"},
		{Check{Name: "agent image", Detail: "missing", Fix: "import it"}, "WARN agent image            missing — fix: import it"},
		{Check{Name: "nodes", Required: true, Detail: "0 Ready"}, "FAIL nodes                  0 Ready"},
	} {
		if got := c.c.String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// A member's logs are cut to their tail; an error quotes the last lines
// of what a member printed, indented.
func TestTailAndLastLines(t *testing.T) {
	for _, c := range []struct {
		in         string
		n          int
		tail, last string
	}{
		{"a\nb\nc\nd\n", 2, "c\nd", "    c\n    d"},
		{"a\nb\n", 5, "a\nb", "    a\n    b"},
		{"only", 1, "only", "    only"},
	} {
		if got := Tail(c.in, c.n); got != c.tail {
			t.Errorf("Tail(%q, %d) = %q, want %q", c.in, c.n, got, c.tail)
		}
		if got := LastLines(c.in, c.n); got != c.last {
			t.Errorf("LastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.last)
		}
	}
}
