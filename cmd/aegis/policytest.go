package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/strictyaml"
)

// testFile is a policy test table:
//
//	config: aegis.yaml            # relative to this file
//	tests:
//	  - name: an SSH key is off limits whatever the spelling
//	    call: {server: fs, tool: read_text_file, principal: alice,
//	           arguments: {path: "/home/alice/projects/../.ssh/id_rsa"}}
//	    want: deny
//	    rules: [no-ssh]             # optional: the rules that decided
//
// A call may carry the tool's input_schema, as `aegis eval` events do.
type testFile struct {
	Config string      `yaml:"config,required"`
	Tests  []*testCase `yaml:"tests,required"`
}

type testCase struct {
	Pos   strictyaml.Pos        `yaml:"-"`
	Name  string                `yaml:"name,required"`
	Call  testCall              `yaml:"call,required"`
	Want  string                `yaml:"want,required"`
	Rules strictyaml.StringList `yaml:"rules"`
}

func (*testCase) YAMLName() string { return "test" }

type testCall struct {
	Session   string                `yaml:"session"`
	Principal string                `yaml:"principal"`
	Roles     strictyaml.StringList `yaml:"roles"`
	Origin    string                `yaml:"origin"`
	Taint     bool                  `yaml:"taint"`
	Server    string                `yaml:"server,required"`
	Tool      string                `yaml:"tool,required"`
	Arguments jsonValue             `yaml:"arguments"`
	// InputSchema is the tool's input schema as its server would list it:
	// with one, the arguments are checked against it, closed, as `aegis
	// run` checks them against the schema it pinned.
	InputSchema jsonValue `yaml:"input_schema"`
}

func (*testCall) YAMLName() string { return "call" }

// jsonValue holds a YAML value converted to JSON.
type jsonValue struct{ raw json.RawMessage }

func (j *jsonValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	b, err := strictyaml.ToJSON(file, n)
	j.raw = b
	return err
}

func cmdPolicyTest(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy test", stderr)
	verbose := fs.Bool("v", false, "print every test, not only failures")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "usage: aegis policy test [-v] FILE...")
	}
	failed, total := 0, 0
	for _, file := range fs.Args() {
		f, p, err := runTestFile(file, stdout, *verbose)
		if err != nil {
			return err
		}
		failed += f
		total += p + f
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", total-failed, failed)
	if failed > 0 {
		return exitError{1}
	}
	return nil
}

func runTestFile(file string, stdout io.Writer, verbose bool) (failed, passed int, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	var tf testFile
	if err := strictyaml.Decode(file, data, &tf); err != nil {
		return 0, 0, err
	}
	cfgPath := tf.Config
	if !filepath.IsAbs(cfgPath) {
		cfgPath = filepath.Join(filepath.Dir(file), cfgPath)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return 0, 0, err
	}
	eng, err := cfg.Engine()
	if err != nil {
		return 0, 0, err
	}
	for _, tc := range tf.Tests {
		switch tc.Want {
		case "allow", "deny", "ask":
		default:
			return failed, passed, fmt.Errorf("%s: want %q: want allow, deny or ask", tc.Pos, tc.Want)
		}
		origin, err := parseOrigin(tc.Call.Origin)
		if err != nil {
			return failed, passed, fmt.Errorf("%s: %v", tc.Pos, err)
		}
		ev := event{
			Session: tc.Call.Session, Principal: tc.Call.Principal, Roles: tc.Call.Roles,
			Origin: origin.String(), Taint: tc.Call.Taint, Server: tc.Call.Server, Tool: tc.Call.Tool,
			Arguments: tc.Call.Arguments.raw, InputSchema: tc.Call.InputSchema.raw,
		}
		if ev.Arguments == nil {
			ev.Arguments = json.RawMessage("{}")
		}
		v := eng.Check(context.Background(), ev.call())
		var rules []string
		if v.Err == nil {
			rules = v.Decision.Rules()
		}
		ok := v.Effect.String() == tc.Want
		if len(tc.Rules) > 0 && !slices.Equal(sorted(rules), sorted(tc.Rules)) {
			ok = false
		}
		switch {
		case !ok:
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %s\n     want %s", tc.Pos, tc.Name, tc.Want)
			if len(tc.Rules) > 0 {
				fmt.Fprintf(stdout, " by %v", []string(tc.Rules))
			}
			fmt.Fprintf(stdout, ", got %s by %v: %s\n", v.Effect, rules, v.Reason())
		default:
			passed++
			if verbose {
				fmt.Fprintf(stdout, "ok   %s: %s\n", tc.Pos, tc.Name)
			}
		}
	}
	return failed, passed, nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
