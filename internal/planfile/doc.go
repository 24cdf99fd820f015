// Package planfile is the one reader of the three studies' plan files
// (rttlab run, place and workers): YAML with the defaults kept for what a
// file leaves out, unknown fields refused with the known ones listed, and
// every error one line "file:line: message" in the words of the plan, not
// of Go's types.
//
//   - read.go: Read, the capped read of a plan file;
//   - parse.go: Parse and Doc (the node tree, Decode into the defaults, the
//     line of a field by its path, Has, Node, Index);
//   - errors.go: FieldError and At (a bad value at a path), Doc.Errorf and
//     Doc.Place (an error at its line), and the decoder's errors told in
//     the plan's words (Schema);
//   - keys.go: Name (a plan's name from its file), Keys and KnownKeys (the
//     fields a type knows, for types with their own UnmarshalYAML).
//
// Each study's plan type (rtt/plan.go, placement/plan.go, workers/plan.go)
// validates its values after the decode.
package planfile
