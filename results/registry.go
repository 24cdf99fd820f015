package results

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// StudyKind is one kind of results folder as the commands know it: each
// study registers its own from its package (its study.go), as
// containerlab's node kinds do, and report, compare, --resume and the
// end of a run look it up by the folder's kind, never by a switch of
// their own. No shared package imports a study: the command imports the
// studies, whose registration then runs.
type StudyKind struct {
	// Kind is the manifest's kind of the study's folders.
	Kind string
	// Writer is the command that writes and resumes them, e.g.
	// "rttlab run".
	Writer string
	// Study reads, reports, compares and digests the study's folders.
	Study Study
	// Open reopens a folder of the study for its --resume (results.Open
	// with the study's raw files); nil where the study's runner opens
	// its folder itself (the RTT study's).
	Open func(dir string) (*Folder, error)
}

var registry struct {
	sync.RWMutex
	kinds map[string]StudyKind
}

// Register adds a study's kind to the registry; a kind registered twice,
// or one without a name, writer or study, is a programming error.
func Register(k StudyKind) {
	if k.Kind == "" || k.Writer == "" || k.Study == nil {
		panic(fmt.Sprintf("results: register study kind %q: kind, writer and study are all needed", k.Kind))
	}
	if got := k.Study.Kind(); got != k.Kind {
		panic(fmt.Sprintf("results: register study kind %q: its study says %q", k.Kind, got))
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.kinds == nil {
		registry.kinds = map[string]StudyKind{}
	}
	if _, ok := registry.kinds[k.Kind]; ok {
		panic(fmt.Sprintf("results: study kind %q registered twice", k.Kind))
	}
	registry.kinds[k.Kind] = k
}

// Lookup is the registered study of kind.
func Lookup(kind string) (StudyKind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	k, ok := registry.kinds[kind]
	return k, ok
}

// Registered lists the registered kinds in the order of Kinds, then any
// other by name.
func Registered() []StudyKind {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]StudyKind, 0, len(registry.kinds))
	for _, k := range registry.kinds {
		out = append(out, k)
	}
	rank := func(k StudyKind) int {
		if i := slices.Index(Kinds, k.Kind); i >= 0 {
			return i
		}
		return len(Kinds)
	}
	slices.SortFunc(out, func(a, b StudyKind) int {
		if c := rank(a) - rank(b); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// knownKinds words the registered kinds for a refusal: "rtt, placement
// or workers".
func knownKinds() string {
	var names []string
	for _, k := range Registered() {
		names = append(names, k.Kind)
	}
	switch len(names) {
	case 0:
		return "none registered"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
