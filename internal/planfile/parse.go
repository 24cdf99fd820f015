package planfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Doc is one plan document: its file name (for errors) and its node tree
// (for the line of every field).
type Doc struct {
	File string
	data []byte
	// Root is the document's top node; a plan is a mapping.
	Root *yaml.Node
}

// Parse reads the node tree of a plan document. A syntax error, an empty
// document or a top level that is not a mapping is one line naming the
// file and line; known lists the top-level fields for that message.
func Parse(file string, data []byte, known []string) (*Doc, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, decodeError(file, data, err, nil, Schema{})
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the plan is empty", file)
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a plan is a mapping of fields (known: %s)", file, top.Line, strings.Join(known, ", "))
	}
	return &Doc{File: file, data: data, Root: top}, nil
}

// Schema names, for a plan's errors, the parts of its Go types: Kinds
// gives words for a type as the decoder names it ("[]rtt.PlanApp":
// "a list of apps"), Where the place of an unknown field by the bare type
// name ("PlanApp": "in an app entry"). Types not named get generic words.
type Schema struct {
	Kinds map[string]string
	Where map[string]string
}

// Decode decodes the document into v, which holds the defaults: fields the
// document leaves out keep them. An unknown field is refused with the
// known ones listed; a value of the wrong kind says what kind was expected.
func (d *Doc) Decode(v any, s Schema) error {
	dec := yaml.NewDecoder(bytes.NewReader(d.data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return decodeError(d.File, d.data, err, reflect.TypeOf(v), s)
	}
	return nil
}

// Line is the line of the field at path under the top mapping: keys and
// list items joined by dots or written in brackets, an item by its index
// or by the value of its name field ("apps[1].request_mix.0",
// "apps[name=go].routes[2]", "capacity.max_rate"); the line of the
// deepest part that is there when the rest is not; 0 for an empty path.
func (d *Doc) Line(path string) int {
	if d == nil || d.Root == nil || path == "" {
		return 0
	}
	parts := splitPath(path)
	if child(d.Root, parts[0]) == nil {
		return 0 // a field the document leaves out has no line
	}
	return nodeLine(d.Root, parts)
}

// Has reports whether the field at path is in the document.
func (d *Doc) Has(path string) bool { return d.Node(path) != nil }

// Node is the value node of the field at path, or nil.
func (d *Doc) Node(path string) *yaml.Node {
	if d == nil || d.Root == nil {
		return nil
	}
	n := d.Root
	for _, part := range splitPath(path) {
		if n = child(n, part); n == nil {
			return nil
		}
	}
	return n
}

// Index is the position of the item of the list at path whose field key
// has the value value (the apps entry named go), or -1.
func (d *Doc) Index(path, key, value string) int {
	if d == nil || d.Root == nil {
		return -1
	}
	n := d.Root
	for _, part := range splitPath(path) {
		if n = child(n, part); n == nil {
			return -1
		}
	}
	if n.Kind != yaml.SequenceNode {
		return -1
	}
	for i, item := range n.Content {
		if v := child(item, key); v != nil && v.Value == value {
			return i
		}
	}
	return -1
}

// splitPath splits a path at dots and brackets; a bracketed part is kept
// whole, so that a selector's value may hold dots (apps[name=my.app]).
func splitPath(path string) []string {
	var out []string
	for path != "" {
		switch {
		case path[0] == '.':
			path = path[1:]
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				end = len(path)
			}
			out = append(out, path[1:end])
			path = path[min(end+1, len(path)):]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			out = append(out, path[:end])
			path = path[end:]
		}
	}
	return out
}

// child is the value of key part in a mapping, or item part of a list:
// by index, or "key=value" for the item whose field key has that value.
func child(n *yaml.Node, part string) *yaml.Node {
	if k, v, ok := strings.Cut(part, "="); ok && n.Kind == yaml.SequenceNode {
		for _, item := range n.Content {
			if c := child(item, k); c != nil && c.Value == v {
				return item
			}
		}
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// nodeLine is the line of the node path names under n: the key's line for
// a mapping field; the deepest found when the rest is not there.
func nodeLine(n *yaml.Node, path []string) int {
	if len(path) == 0 {
		return n.Line
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == path[0] {
				if len(path) == 1 {
					return n.Content[i].Line
				}
				return nodeLine(n.Content[i+1], path[1:])
			}
		}
	}
	if c := child(n, path[0]); c != nil {
		return nodeLine(c, path[1:])
	}
	return n.Line
}

var (
	lineRE         = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownFieldRE = regexp.MustCompile(`^field (.+) not found in type [\w.]*?(\w+)$`)
	wrongTypeRE    = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
)
