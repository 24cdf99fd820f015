package vmtest

import (
	"strings"
	"testing"
)

func TestConsoleRoundTrip(t *testing.T) {
	lines := []string{
		"[    0.000000] Linux version 6.1.0",
		guestLine("uname", "6.1.0-57-amd64 #1 SMP"),
		guestLine("log", "read back: qdisc netem 7274: root delay 10ms\nsecond line"),
		"noise " + checkLine("kernel/set", true, "ok"),
		checkLine("kernel/clear", false, "qdisc left"),
		guestLine("summary", "FAIL passed=1 failed=1"),
		"[   12.000000] reboot: Power down",
	}
	var kinds []string
	res, err := readConsole(strings.NewReader(strings.Join(lines, "\r\n")+"\r\n"), func(kind, _ string) { kinds = append(kinds, kind) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Uname != "6.1.0-57-amd64 #1 SMP" || len(res.Logs) != 1 || res.Logs[0] != "read back: qdisc netem 7274: root delay 10ms | second line" {
		t.Fatalf("uname %q logs %q", res.Uname, res.Logs)
	}
	if len(res.Checks) != 2 || !res.Checks[0].Pass || res.Checks[0].Name != "kernel/set" || res.Checks[1].Pass || res.Checks[1].Detail != "qdisc left" {
		t.Fatalf("checks %+v", res.Checks)
	}
	if !res.HaveSummary || res.SummaryPass || res.Summary != "passed=1 failed=1" {
		t.Fatalf("summary %v %v %q", res.HaveSummary, res.SummaryPass, res.Summary)
	}
	if strings.Join(kinds, ",") != "uname,log,check,check,summary" || res.Tail[len(res.Tail)-1] != "[   12.000000] reboot: Power down" {
		t.Fatalf("kinds %v tail %q", kinds, res.Tail)
	}
}
