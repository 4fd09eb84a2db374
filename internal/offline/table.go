// Package offline decides calls given as data, through the same pipeline
// as `aegis run` but with no server: the JSON Lines events of `aegis eval`
// and `aegis explain` ([Event], [Decider]), and the policy test tables of
// `aegis policy test` (DESIGN.md R10, [Run]): a YAML file naming a
// configuration and a list of calls, each with the decision (and
// optionally the rules) it must get. A table is decided without pins: it is
// a fixed statement about a policy, and must not change with what a server
// listed last.
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
package offline

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/strictyaml"
)

type file struct {
	Config string  `yaml:"config,required"`
	Tests  []*test `yaml:"tests,required"`
}

type test struct {
	Pos   strictyaml.Pos        `yaml:"-"`
	Name  string                `yaml:"name,required"`
	Call  call                  `yaml:"call,required"`
	Want  string                `yaml:"want,required"`
	Rules strictyaml.StringList `yaml:"rules"`
}

func (*test) YAMLName() string { return "test" }

type call struct {
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

func (*call) YAMLName() string { return "call" }

// jsonValue holds a YAML value converted to JSON (strictyaml.ToJSON).
type jsonValue struct{ raw []byte }

func (j *jsonValue) UnmarshalYAMLNode(file string, n *yaml.Node) error {
	b, err := strictyaml.ToJSON(file, n)
	j.raw = b
	return err
}

// Result is the outcome of one test of a table.
type Result struct {
	Pos       string   // file:line:col of the test
	Name      string   // the test's name
	Want      string   // allow, deny or ask
	WantRules []string // the rules that must decide; nil for any
	Got       string   // the decision
	GotRules  []string // the policy's rules that decided, nil when none did
	Reason    string   // the decision's reason
	Pass      bool
}

// Run loads the table in path and decides each of its calls. An error means
// the table or its configuration could not be read: no test ran.
func Run(ctx context.Context, path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf file
	if err := strictyaml.Decode(path, data, &tf); err != nil {
		return nil, err
	}
	cfgPath := tf.Config
	if !filepath.IsAbs(cfgPath) {
		cfgPath = filepath.Join(filepath.Dir(path), cfgPath)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	eng, err := cfg.Engine()
	if err != nil {
		return nil, err
	}
	sessions := map[string]*gateway.Session{}
	var out []Result
	for _, tc := range tf.Tests {
		switch tc.Want {
		case "allow", "deny", "ask":
		default:
			return nil, fmt.Errorf("%s: want %q: want allow, deny or ask", tc.Pos, tc.Want)
		}
		c, err := tc.Call.gateway()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", tc.Pos, err)
		}
		var v gateway.Verdict
		s, ok := sessions[c.Server]
		if !ok && eng.Server(c.Server) != nil {
			if s, err = eng.NewSession(&gateway.SessionConfig{Server: c.Server}); err != nil {
				return nil, err
			}
			sessions[c.Server] = s
		}
		if s != nil {
			v = s.Decide(ctx, c)
		} else {
			v = eng.Check(ctx, c) // a server the configuration does not name: denied, saying so
		}
		r := Result{Pos: tc.Pos.String(), Name: tc.Name, Want: tc.Want, WantRules: tc.Rules, Got: v.Effect.String(), Reason: v.Reason()}
		if v.Err == nil {
			r.GotRules = v.Decision.Rules()
		}
		r.Pass = r.Got == r.Want && (len(r.WantRules) == 0 || slices.Equal(sorted(r.GotRules), sorted(r.WantRules)))
		out = append(out, r)
	}
	return out, nil
}

// gateway returns the gateway call of a test's call. An unattended session
// is tainted from its start (DESIGN.md R19).
func (c *call) gateway() (*gateway.Call, error) {
	origin := capability.Interactive
	if c.Origin != "" {
		var ok bool
		if origin, ok = capability.ParseOrigin(c.Origin); !ok {
			return nil, fmt.Errorf("origin %q: want interactive or unattended", c.Origin)
		}
	}
	gc := &gateway.Call{
		Session: c.Session, Principal: c.Principal, Roles: c.Roles, Origin: origin,
		Taint:  c.Taint || origin == capability.Unattended,
		Server: c.Server, Tool: c.Tool, Arguments: c.Arguments.raw,
	}
	if gc.Arguments == nil || string(gc.Arguments) == "null" {
		gc.Arguments = []byte("{}")
	}
	if s := c.InputSchema.raw; s != nil && string(s) != "null" {
		gc.Schema, gc.SchemaKey = s, sha256.Sum256(s)
	}
	return gc, nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
