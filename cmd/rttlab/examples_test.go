package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// The CI examples in examples/ci are checked, not run: each parses as
// YAML, installs rttlab with go install, builds the user's image, gates
// and smoke-runs that image (--app-image with its routes and database
// init), uploads the results folder, and every rttlab command line in its
// steps names sub-commands and flags that exist, with the number of
// arguments the command takes.
func TestCIExamples(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "ci")
	files := map[string]func(t *testing.T, doc map[string]any) []string{
		"github-actions.yml": githubScripts,
		"gitlab-ci.yml":      gitlabScripts,
	}
	for name, scripts := range files {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatalf("%s is not valid YAML: %v", name, err)
			}
			lines := scripts(t, doc)
			all := strings.Join(lines, "\n")
			if !strings.Contains(all, "go install github.com/rttlab/rttlab/cmd/rttlab@latest") {
				t.Error("does not install rttlab with go install ...@latest")
			}
			if !strings.Contains(all, "docker build -t") {
				t.Error("does not build the app's image")
			}
			if !strings.Contains(string(data), "rttlab-results/") {
				t.Error("does not keep the results folder as an artifact")
			}
			cmds := rttlabCommands(lines)
			var seen []string
			for _, c := range cmds {
				path, err := checkCommandLine(newRootCmd(), c)
				if err != nil {
					t.Errorf("%s: rttlab %s: %v", name, strings.Join(c, " "), err)
				}
				seen = append(seen, path)
				if path == "trace" && (!slices.Contains(c, "--budget") || !slices.Contains(c, "--junit")) {
					t.Errorf("%s: the gate does not pass --budget and --junit: %v", name, c)
				}
				if (path == "trace" || path == "ci-smoke") && !containsAll(c, "--app-image", "--routes", "--db-init") {
					t.Errorf("%s: rttlab %s does not run the user's image (--app-image, --routes, --db-init): %v", name, path, c)
				}
			}
			for _, want := range []string{"trace", "ci-smoke"} {
				if !slices.Contains(seen, want) {
					t.Errorf("%s runs no rttlab %s (runs: %v)", name, want, seen)
				}
			}
		})
	}
}

func containsAll(args []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(args, w) {
			return false
		}
	}
	return true
}

// The checker itself finds a flag, a sub-command or an argument count
// that does not exist.
func TestCheckCommandLine(t *testing.T) {
	bad := map[string]string{
		`sudo env "PATH=$PATH" rttlab trace go --budgett /feed=3`:  `unknown flag --budgett`,
		`rttlab trace go --junit`:                                  `flag --junit needs a value`,
		`rttlab traec go`:                                          `unknown command "traec"`,
		`rttlab images biuld go`:                                   `unknown command "biuld" for "rttlab images"`,
		`rttlab trace`:                                             `accepts 1 arg(s), received 0`,
		`rttlab ci-smoke go --format json > x`:                     `unknown flag --format`,
		`rttlab trace go -z`:                                       `unknown flag -z`,
		"echo ok && rttlab trace go --budget=/feed=3 --nope | tee": `unknown flag --nope`,
		`rttlab trace --app-imag my-app:ci --routes /a`:            `unknown flag --app-imag`,
		`rttlab ci-smoke go --app-image my-app:ci --routes /a`:     `drop the argument "go"`,
		`rttlab up --port 3000`:                                    `--port describes an app given by --app-image`,
	}
	for line, want := range bad {
		cmds := rttlabCommands([]string{line})
		if len(cmds) != 1 {
			t.Errorf("%s: %d rttlab commands", line, len(cmds))
			continue
		}
		if _, err := checkCommandLine(newRootCmd(), cmds[0]); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	good := []string{
		`rttlab trace go --budget /feed=3 --budget=/x=1 --format json --log-level debug`,
		`sudo -E rttlab run --plan smoke --apps go,node`,
		`rttlab --version`,
		`rttlab images build go node`,
		`/usr/local/bin/rttlab verify -h`,
		`X=1 rttlab doctor; rttlab images base 2>&1`,
		`rttlab trace --app-image my-app:ci --routes /a,/b --db-init db/schema.sql --budget /a=2 --junit b.xml`,
		`rttlab ci-smoke --compose compose.yaml --app-service web --db-service db --routes /a`,
		`rttlab verify --app-image "$APP_IMAGE" --routes "$ROUTES" --port "$PORT"`,
	}
	for _, line := range good {
		for _, c := range rttlabCommands([]string{line}) {
			if _, err := checkCommandLine(newRootCmd(), c); err != nil {
				t.Errorf("%s: %v", line, err)
			}
		}
	}
	if n := len(rttlabCommands([]string{"go install github.com/rttlab/rttlab/cmd/rttlab@latest", "echo rttlab trace"})); n != 0 {
		t.Errorf("%d commands found in lines that run no rttlab", n)
	}
}

// githubScripts returns the run: scripts of every step of every job.
func githubScripts(t *testing.T, doc map[string]any) []string {
	jobs, _ := doc["jobs"].(map[string]any)
	if len(jobs) == 0 {
		t.Fatal("no jobs")
	}
	var out []string
	for _, j := range jobs {
		steps, _ := j.(map[string]any)["steps"].([]any)
		if len(steps) == 0 {
			t.Fatal("a job has no steps")
		}
		for _, s := range steps {
			if run, ok := s.(map[string]any)["run"].(string); ok {
				out = append(out, run)
			}
		}
	}
	return out
}

// gitlabScripts returns the before_script, script and after_script lines
// of every job (a top-level mapping with a script).
func gitlabScripts(t *testing.T, doc map[string]any) []string {
	var out []string
	jobs := 0
	for _, v := range doc {
		j, ok := v.(map[string]any)
		if !ok || j["script"] == nil {
			continue
		}
		jobs++
		for _, k := range []string{"before_script", "script", "after_script"} {
			switch s := j[k].(type) {
			case string:
				out = append(out, s)
			case []any:
				for _, l := range s {
					out = append(out, fmt.Sprint(l))
				}
			}
		}
	}
	if jobs == 0 {
		t.Fatal("no job with a script")
	}
	return out
}

// rttlabCommands returns the arguments of every rttlab command in shell
// scripts: continued lines joined, commands split at ; && || and |, the
// program found past sudo, env and variable assignments, the arguments
// ending at a redirection.
func rttlabCommands(scripts []string) [][]string {
	var out [][]string
	for _, s := range scripts {
		s = strings.ReplaceAll(s, "\\\n", " ")
		for _, line := range strings.Split(s, "\n") {
			var cmd []string
			flush := func() {
				if args, ok := rttlabArgs(cmd); ok {
					out = append(out, args)
				}
				cmd = nil
			}
			for _, w := range shellWords(line) {
				switch w {
				case ";", "&&", "||", "|":
					flush()
				default:
					cmd = append(cmd, w)
				}
			}
			flush()
		}
	}
	return out
}

func rttlabArgs(words []string) ([]string, bool) {
	i := 0
	for i < len(words) {
		w := words[i]
		switch {
		case w == "sudo" || w == "env" || (strings.HasPrefix(w, "-") && i > 0 && (words[i-1] == "sudo" || strings.HasPrefix(words[i-1], "-"))):
			i++
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			i++
		default:
			if filepath.Base(w) != "rttlab" {
				return nil, false
			}
			var args []string
			for _, a := range words[i+1:] {
				if strings.ContainsAny(a[:1], "<>") || strings.HasPrefix(a, "2>") || strings.HasPrefix(a, "1>") || strings.HasPrefix(a, "&>") {
					break
				}
				args = append(args, a)
			}
			return args, true
		}
	}
	return nil, false
}

// shellWords splits a line into words the way a shell would for our
// purposes: quotes group (and are removed), operators ; && || | stand
// alone, a # starting a word ends the line.
func shellWords(line string) []string {
	var out []string
	var cur strings.Builder
	in := false // a word is open
	var quote rune
	end := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			end()
		case r == '#' && !in:
			end()
			return out
		case r == ';' || r == '|' || r == '&':
			end()
			op := string(r)
			if i+1 < len(rs) && rs[i+1] == r && r != ';' {
				op += string(r)
				i++
			}
			if op == "&" { // part of a redirection such as 2>&1
				cur.WriteString(op)
				in = true
				continue
			}
			out = append(out, op)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	end()
	return out
}

// checkCommandLine walks the command tree along args and checks each
// flag and the number of positional arguments; it returns the
// sub-command's path below the root.
func checkCommandLine(root *cobra.Command, args []string) (string, error) {
	c := root
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			short := !strings.HasPrefix(a, "--")
			f := lookupFlag(c, name, short)
			if f == nil {
				if name == "help" || name == "h" || (c == root && name == "version") {
					continue
				}
				return "", fmt.Errorf("unknown flag %s for %q", a, c.CommandPath())
			}
			// Marked as given: what the command accepts as arguments
			// depends on it (APP, or none with --app-image).
			f.Changed = true
			if f.Value.Type() != "bool" && !hasVal {
				if i+1 >= len(args) {
					return "", fmt.Errorf("flag %s needs a value", a)
				}
				i++
			}
			continue
		}
		if len(pos) == 0 && c.HasSubCommands() {
			var next *cobra.Command
			for _, s := range c.Commands() {
				if s.Name() == a || slices.Contains(s.Aliases, a) {
					next = s
				}
			}
			if next == nil {
				return "", fmt.Errorf("unknown command %q for %q", a, c.CommandPath())
			}
			c = next
			continue
		}
		pos = append(pos, a)
	}
	if c.Args != nil && !slices.Contains(args, "--help") && !slices.Contains(args, "-h") && !(c == root && slices.Contains(args, "--version")) {
		if err := c.Args(c, pos); err != nil {
			return "", err
		}
	}
	return strings.TrimPrefix(c.CommandPath(), root.Name()+" "), nil
}

// lookupFlag returns a flag of c (its own, its persistent ones or its
// parents'), by name or by shorthand; nil when there is none.
func lookupFlag(c *cobra.Command, name string, short bool) *pflag.Flag {
	if short && len(name) != 1 {
		return nil // pflag's shorthand lookup takes one letter
	}
	for x := c; x != nil; x = x.Parent() {
		f, p := x.Flags().Lookup(name), x.PersistentFlags().Lookup(name)
		if short {
			f, p = x.Flags().ShorthandLookup(name), x.PersistentFlags().ShorthandLookup(name)
		}
		if f == nil {
			f = p
		}
		if f != nil {
			return f
		}
	}
	return nil
}
