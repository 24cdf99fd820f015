package apps

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Templates are the apps `rttlab apps new --from` copies.
var Templates = []string{"go", "node", "rails", "axum"}

// Scaffold creates appsDir/name as a copy of the template app (a complete
// implementation of the route contract), renamed, with a README stub that
// lists the edits to make. It refuses an invalid or existing name.
func Scaffold(appsDir, name, from string) ([]string, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("app name %q is invalid: use lower-case letters, digits and '-', starting with a letter (at most 31)", name)
	}
	known := false
	for _, t := range Templates {
		known = known || t == from
	}
	if !known {
		return nil, fmt.Errorf("template %q is unknown: use one of %s", from, strings.Join(Templates, ", "))
	}
	dst := filepath.Join(appsDir, name)
	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("apps/%s already exists: choose another name or remove it", name)
	}
	src := filepath.Join(appsDir, from)
	if _, err := os.Stat(filepath.Join(src, "app.yaml")); err != nil {
		return nil, fmt.Errorf("template apps/%s not found in %s: run from a checkout of rttlab", from, appsDir)
	}
	var written []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "target" {
				return filepath.SkipDir // a Rust build folder
			}
			return os.MkdirAll(out, 0o755)
		}
		if rel == "README.md" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case rel == "app.yaml":
			data = renameMeta(data, from, name)
		case strings.HasSuffix(rel, ".go"):
			// A Go template's test checks its own metadata by name.
			data = bytes.ReplaceAll(data, []byte(`ParseMeta("`+from+`"`), []byte(`ParseMeta("`+name+`"`))
		}
		info, _ := d.Info()
		if err := os.WriteFile(out, data, info.Mode().Perm()); err != nil {
			return err
		}
		written = append(written, filepath.Join("apps", name, rel))
		return nil
	})
	if err != nil {
		os.RemoveAll(dst)
		return nil, fmt.Errorf("scaffold apps/%s: %w", name, err)
	}
	readme := fmt.Sprintf(readmeStub, name, from, name, name, name, name)
	if err := os.WriteFile(filepath.Join(dst, "README.md"), []byte(readme), 0o644); err != nil {
		os.RemoveAll(dst)
		return nil, err
	}
	written = append(written, filepath.Join("apps", name, "README.md"))
	// The copy must parse as an app of its own.
	data, _ := os.ReadFile(filepath.Join(dst, "app.yaml"))
	if _, err := ParseMeta(name, data); err != nil {
		os.RemoveAll(dst)
		return nil, fmt.Errorf("scaffold apps/%s: %w", name, err)
	}
	return written, nil
}

var (
	nameLine    = regexp.MustCompile(`(?m)^name: .*$`)
	descLine    = regexp.MustCompile(`(?m)^description: .*$`)
	packageLine = regexp.MustCompile(`(?m)(package: \./apps/)[a-z0-9-]+`)
)

func renameMeta(data []byte, from, name string) []byte {
	data = nameLine.ReplaceAll(data, []byte("name: "+name))
	data = descLine.ReplaceAll(data, []byte(fmt.Sprintf("description: %s (scaffolded from apps/%s; describe your stack here)", name, from)))
	data = packageLine.ReplaceAll(data, []byte("${1}"+name))
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	return data
}

const readmeStub = `# %s

Scaffolded by ` + "`rttlab apps new`" + ` from apps/%s: a complete, working
implementation of the route contract (see ../README.md) to change into your
own framework's.

## Edits

1. Replace the source with your framework's, keeping the routes and the
   database work of the contract exactly: ` + "`/health`" + ` (no database work),
   ` + "`/feed`" + ` (3 dependent statements), ` + "`/feed-naive`" + ` (12),
   ` + "`/serial?n=N`" + ` (N x SELECT 1; 400 for a bad n). Read the database
   address from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE; listen on PORT.
2. Keep the Dockerfile FROM debian:trixie-slim, installing only from the
   Debian archive.
3. Describe the stack in app.yaml (description; routes and statements if you
   change them).

## Check and run

    rttlab images build %s
    rttlab verify %s
    rttlab run --plan smoke --apps %s --routes /feed,/feed-naive
    rttlab apps list    # shows %s
`
