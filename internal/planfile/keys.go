package planfile

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Name is the plan's name for a file that names none: its base name
// without .yaml or .yml.
func Name(file string) string {
	base := file[strings.LastIndexByte(file, '/')+1:]
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
}

// Keys lists the YAML keys of a struct type in field order.
func Keys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			out = append(out, k)
		}
	}
	return out
}

// KnownKeys refuses a mapping key not in known; a type with its own
// UnmarshalYAML calls it, since the decoder's check of known fields does
// not reach into a custom unmarshaler.
func KnownKeys(n *yaml.Node, known ...string) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(known, k.Value) {
			return fmt.Errorf("line %d: unknown field %q (known: %s)", k.Line, k.Value, strings.Join(known, ", "))
		}
	}
	return nil
}
