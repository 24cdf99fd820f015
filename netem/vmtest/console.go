package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// The guest speaks to the host through the serial console, one line per
// message, each starting with linePrefix and a kind:
//
//	rttlab-vm: log <text>
//	rttlab-vm: uname <release> <version>
//	rttlab-vm: check <backend>/<name> PASS|FAIL <detail>
//	rttlab-vm: summary PASS|FAIL <counts>
//
// Anything else on the console (the kernel's own lines) is kept only for
// the tail shown when the guest never got to its summary.
const linePrefix = "rttlab-vm: "

// guestLine formats one console line of the given kind; newlines in text
// become " | " so that a message stays one line.
func guestLine(kind, text string) string {
	text = strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", " | ")
	return linePrefix + kind + " " + text
}

// checkLine formats a check's result.
func checkLine(name string, pass bool, detail string) string {
	return guestLine("check", fmt.Sprintf("%s %s %s", name, verdict(pass), detail))
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// checkResult is one check as the host read it.
type checkResult struct {
	Name   string
	Pass   bool
	Detail string
}

// consoleResult is what the host read from the guest's console.
type consoleResult struct {
	Uname       string
	Logs        []string
	Checks      []checkResult
	HaveSummary bool
	SummaryPass bool
	Summary     string
	Tail        []string // the last console lines, of any kind
}

const tailLines = 60

// readConsole reads the console until EOF, calling onLine (if not nil)
// for every guest line as it arrives.
func readConsole(r io.Reader, onLine func(kind, text string)) (consoleResult, error) {
	var res consoleResult
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		raw := strings.TrimRight(sc.Text(), "\r")
		res.Tail = append(res.Tail, raw)
		if len(res.Tail) > tailLines {
			res.Tail = res.Tail[1:]
		}
		i := strings.Index(raw, linePrefix)
		if i < 0 {
			continue
		}
		kind, text, _ := strings.Cut(raw[i+len(linePrefix):], " ")
		switch kind {
		case "log":
			res.Logs = append(res.Logs, text)
		case "uname":
			res.Uname = text
		case "check":
			name, rest, _ := strings.Cut(text, " ")
			v, detail, _ := strings.Cut(rest, " ")
			res.Checks = append(res.Checks, checkResult{Name: name, Pass: v == "PASS", Detail: detail})
		case "summary":
			v, detail, _ := strings.Cut(text, " ")
			res.HaveSummary, res.SummaryPass, res.Summary = true, v == "PASS", detail
		default:
			continue
		}
		if onLine != nil {
			onLine(kind, text)
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read the VM's console: %w", err)
	}
	return res, nil
}
