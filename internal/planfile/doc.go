package planfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
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

// Errorf is "file:line: message", the line that of the field at path
// ("file: message" when the document does not have it).
func (d *Doc) Errorf(path, format string, a ...any) error {
	return d.at(d.Line(path), fmt.Sprintf(format, a...))
}

// Place turns a FieldError (anywhere in err's chain) into "file:line:
// message"; any other error becomes "file: message".
func (d *Doc) Place(err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return d.at(d.Line(fe.Path), err.Error())
	}
	return d.at(0, err.Error())
}

func (d *Doc) at(line int, msg string) error {
	if line > 0 {
		return fmt.Errorf("%s:%d: %s", d.File, line, msg)
	}
	return fmt.Errorf("%s: %s", d.File, msg)
}

// FieldError is a bad value of the field at Path (as Doc.Line takes it);
// its message is Err's. Validation returns it so that a plan read from a
// file gets the line, while one built by flags gets the same words.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// At is a FieldError for path with a formatted message.
func At(path, format string, a ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf(format, a...)}
}

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

// decodeError turns a YAML decoder error into "file:line: what", in the
// plan's words: an unknown field lists the known ones, a value of the
// wrong kind says what kind was expected, a number too large for its
// field says so.
func decodeError(file string, data []byte, err error, t reflect.Type, s Schema) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.Join(strings.Fields(strings.TrimPrefix(msg, "yaml: ")), " ")
	msg = strings.TrimPrefix(msg, "unmarshal errors: ")
	line := ""
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, msg = ":"+m[1], m[2]
	}
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown field %q", m[1])
		if w := s.Where[m[2]]; w != "" {
			msg += " " + w
		}
		if keys := typeKeys(t)[m[2]]; len(keys) > 0 {
			msg += " (known: " + strings.Join(keys, ", ") + ")"
		}
	} else if m := wrongTypeRE.FindStringSubmatch(msg); m != nil {
		msg = wrongKind(m[1], m[2], m[3], s)
	} else if words := syntaxWords(msg); words != msg {
		msg = words
		if n, err := strconv.Atoi(strings.TrimPrefix(line, ":")); err == nil {
			line = ":" + strconv.Itoa(openerLine(data, n))
		}
	}
	return fmt.Errorf("%s%s: %s", file, line, msg)
}

// openerLine is the line of the unclosed [ or { the parser stopped at:
// the parser names the line before the one that holds it when the
// bracket opens a field's value on a line of its own, so the first line
// from the named one on whose brackets do not balance.
func openerLine(data []byte, line int) int {
	lines := strings.Split(string(data), "\n")
	for i := line - 1; i >= 0 && i < len(lines) && i <= line; i++ {
		l := lines[i]
		if strings.Count(l, "[")+strings.Count(l, "{") > strings.Count(l, "]")+strings.Count(l, "}") {
			return i + 1
		}
	}
	return line
}

// wrongKind says what a value of YAML tag tag (and text value) is not.
func wrongKind(tag, value, goType string, s Schema) string {
	got := map[string]string{"seq": "a list", "map": "a mapping"}[tag]
	if got == "" {
		got = tag
	}
	if value != "" {
		got = fmt.Sprintf("%q", value)
	} else if tag == "str" {
		got = "an empty value"
	}
	bare := strings.TrimLeft(goType, "*")
	digits := strings.TrimSuffix(strings.TrimPrefix(value, "-"), "...")
	if (tag == "int" || tag == "float") && bigNumberRE.MatchString(value) && isInteger(bare) &&
		(strings.HasSuffix(value, "...") || len(digits) > maxDigits(bare)) {
		return fmt.Sprintf("%s is too large: give a whole number of at most %d digits", got, maxDigits(bare))
	}
	return fmt.Sprintf("%s is not %s", got, kindWords(bare, s))
}

var bigNumberRE = regexp.MustCompile(`^-?[0-9]+(\.\.\.)?$`)

// maxDigits is how many decimal digits always fit an integer type.
func maxDigits(goType string) int {
	switch goType {
	case "int8", "uint8":
		return 2
	case "int16", "uint16":
		return 4
	case "int32", "uint32":
		return 9
	case "uint64", "uint":
		return 19
	}
	return 18
}

func isInteger(goType string) bool {
	switch goType {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}

// kindWords names a Go type the way a plan's reader knows it.
func kindWords(goType string, s Schema) string {
	if w, ok := s.Kinds[goType]; ok {
		return w
	}
	switch {
	case strings.HasPrefix(goType, "[]"):
		switch goType[2:] {
		case "string":
			return "a list of strings"
		case "float64":
			return "a list of numbers"
		case "int":
			return "a list of whole numbers"
		}
		return "a list"
	case strings.HasPrefix(goType, "map["):
		if goType == "map[string]string" {
			return "a mapping of strings"
		}
		return "a mapping"
	case goType == "float64" || goType == "float32":
		return "a number"
	case strings.HasPrefix(goType, "uint"):
		return "a non-negative whole number"
	case strings.HasPrefix(goType, "int"):
		return "a whole number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	}
	return "a mapping"
}

// syntaxWords rewords the YAML parser's messages that name its own
// internals.
func syntaxWords(msg string) string {
	switch {
	case strings.Contains(msg, "did not find expected ',' or ']'"):
		return "a list opened with [ is not closed: end it with ] (or write one item per line with -)"
	case strings.Contains(msg, "did not find expected ',' or '}'"):
		return "a mapping opened with { is not closed: end it with }"
	}
	return msg
}

// typeKeys maps the bare name of every struct type reachable from t to its
// YAML keys, for the known fields of an unknown-field error.
func typeKeys(t reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct || t.Name() == "" {
			return
		}
		if _, seen := out[t.Name()]; seen {
			return
		}
		out[t.Name()] = Keys(t)
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				walk(t.Field(i).Type)
			}
		}
	}
	walk(t)
	return out
}
