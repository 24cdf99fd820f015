package stack

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// LabelOwner names, on a run's network, the process that started the run
// ("PID:START", START being the process's start time in clock ticks since
// boot, so that a reused pid is not mistaken for the owner). clean leaves
// a run whose owner still lives unless forced: a study in progress is not
// pulled from under its runner.
const LabelOwner = "io.rttlab.owner"

// NetworkLabels are the labels of a run's network: the run's, the extra
// ones, and this process as its owner.
func NetworkLabels(runID string, extra map[string]string) map[string]string {
	l := RunLabels(runID, extra)
	if o := processOwner(os.Getpid()); o != "" {
		l[LabelOwner] = o
	}
	return l
}

// processOwner is "PID:START" of a live process, "" when it is gone.
func processOwner(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ')' start at field 3.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + ":" + f[19] // field 22, starttime
}

// ownerAlive reports the pid of an owner label whose process still lives.
func ownerAlive(label string) (int, bool) {
	p, _, ok := strings.Cut(label, ":")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, processOwner(pid) == label
}

// LiveRuns maps each run whose owning process still lives to its pid.
func LiveRuns(ctx context.Context, d runtime.Network) (map[string]int, error) {
	ns, err := d.ListNetworks(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, n := range ns {
		if pid, ok := ownerAlive(n.Labels[LabelOwner]); ok && pid != os.Getpid() {
			out[n.Labels[engine.LabelRun]] = pid
		}
	}
	return out, nil
}
