package gateway

import (
	"errors"
	"fmt"
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/egress"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/schema"
	"github.com/aegis-mcp/aegis/internal/session"
	"github.com/aegis-mcp/aegis/internal/shape"
)

// Server is what the engine knows of one configured server.
type Server struct {
	Name     string
	Bindings binding.Table   // nil: every tool is unbound
	Options  binding.Options // how its arguments are canonicalised
	// HideUnallowed hides from the client's tools/list the tools that no
	// rule could allow (policy.Set.MayAllow).
	HideUnallowed bool
	// Templates, if set, is the template syntax the server expands in its
	// inputs: template markers in model-written strings are neutralised
	// (R13).
	Templates *shape.Syntax
	// Tools configures the checks per tool; a tool not listed has none.
	Tools map[string]*Tool
	// ValueTaint makes an untrusted result taint the calls that carry its
	// values (R36) instead of the whole session: its URLs, addresses, long
	// words and short strings are kept, and a call whose arguments hold
	// one is tainted.
	ValueTaint bool
	// Methods configures the checks of requests of other MCP methods, by
	// method (of its settings, the caps, untrusted, allow_unattended and
	// ids apply). A method aegis does not decide itself is refused unless
	// it is listed here; then it is decided as an unbound action.
	Methods map[string]*Tool
	// Prompts binds the arguments of prompts, by prompt name, as Bindings
	// binds those of tools: of prompts/get, and of the completion of a
	// prompt's argument. A prompt without one is unbound.
	Prompts binding.Table
	// Egress is the gate every net.connect capability passes (R15); nil
	// means the default gate.
	Egress *egress.Checker
	// SchemaOff turns off the closed-schema check of arguments (R11),
	// which is on whenever a call carries its tool's pinned schema.
	SchemaOff bool
	// DLP says what secrets found in arguments and results do (R17); nil
	// scans nothing.
	DLP *DLP
	// CaseInsensitive says the server's files are on a case-insensitive
	// volume (macOS's default): its paths meet path_under rules and
	// aegis's own paths ([RuleSelf]) in every case (policy.Request's
	// FoldCase). False: case makes another file.
	CaseInsensitive bool
}

// DLP is a server's data-loss prevention: the actions for findings in
// the arguments of its calls and in its results.
type DLP struct {
	Arguments dlp.Actions
	Results   dlp.Actions
}

// Engine decides calls for a set of servers under one policy. It is safe for
// concurrent use and immutable once built.
type Engine struct {
	policy     *policy.Set
	servers    map[string]*Server
	limits     args.Limits
	sessions   *session.Store
	principals map[string]map[string]string
	// sharedCaps, if set, counts caps in place of sessions (ShareCaps);
	// sharedSessions keeps taint and provenance for replicas too.
	sharedCaps     CapStore
	sharedSessions SharedSessions
	// defaultEgress gates the net.connect of servers with no egress
	// configuration.
	defaultEgress *egress.Checker
	schemas       schemaCache
	schemaOpts    schema.Options // for tools with no configuration
	scratch       sync.Pool      // *scratch
	// protected are the paths no server may read or write (RuleSelf),
	// sorted, none under another, in NFC; protectedKeys are their fold
	// keys (capability.FoldPath), for servers on case-insensitive volumes.
	protected     []string
	protectedKeys []string
	// trusted are the sets of trusted values, whose members count as
	// proven ids of their kind.
	trusted []*policy.ValueSet
}

// Options configures an Engine. The zero value uses the default argument
// limits of package args and a session store of its own.
type Options struct {
	Limits args.Limits
	// Sessions holds the state of sessions (provenance, caps, taint); nil
	// means a new store with the defaults.
	Sessions *session.Store
	// Principals holds attributes of principals, the sources of identity
	// fields ("principal.account").
	Principals map[string]map[string]string
	// Protected are aegis's own paths, which no server may read or write
	// whatever the policy says ([RuleSelf]): its configuration, policy and
	// bindings files and its state directory. Each MUST be absolute and
	// clean, in the form the servers' capabilities take: with symbolic
	// links resolved for a local server, as spelled for another (list
	// both when they differ). Nil protects nothing.
	Protected []string
	// Trusted are the named sets of trusted values (the configuration's
	// sets): an id that is a member of a set of its kind counts as proven
	// (R16), whether or not the server returned it.
	Trusted []*policy.ValueSet
}

// New returns an engine deciding under p for servers.
func New(p *policy.Set, servers []*Server, o *Options) (*Engine, error) {
	if p == nil {
		return nil, errors.New("gateway: no policy")
	}
	e := &Engine{policy: p, servers: make(map[string]*Server, len(servers))}
	if o != nil {
		e.limits, e.sessions, e.principals = o.Limits, o.Sessions, o.Principals
		var err error
		e.trusted = o.Trusted
		if e.protected, e.protectedKeys, err = protectedPaths(o.Protected); err != nil {
			return nil, err
		}
	}
	if e.sessions == nil {
		e.sessions = session.New(nil)
	}
	def, err := egress.New(nil)
	if err != nil {
		return nil, fmt.Errorf("gateway: the default egress gate: %w", err)
	}
	e.defaultEgress = def
	for _, s := range servers {
		if _, dup := e.servers[s.Name]; dup {
			return nil, fmt.Errorf("gateway: server %q configured twice", s.Name)
		}
		for name, t := range s.Tools {
			if err := t.compiled(); err != nil {
				return nil, fmt.Errorf("gateway: server %q, tool %q: %w", s.Name, name, err)
			}
			t.schemaOpts.Limits = &e.limits
		}
		for name, t := range s.Methods {
			if name == "" || name == policy.ToolsCall {
				return nil, fmt.Errorf("gateway: server %q: method %q cannot be configured as a method; tools/call is configured under tools", s.Name, name)
			}
			if err := t.compiled(); err != nil {
				return nil, fmt.Errorf("gateway: server %q, method %q: %w", s.Name, name, err)
			}
			t.schemaOpts.Limits = &e.limits
		}
		e.servers[s.Name] = s
	}
	e.schemaOpts.Limits = &e.limits
	e.scratch.New = func() any { return new(scratch) }
	return e, nil
}

// Policy returns the engine's policy.
func (e *Engine) Policy() *policy.Set { return e.policy }

// Server returns the configured server called name, or nil.
func (e *Engine) Server(name string) *Server { return e.servers[name] }

// ErrUnknownServer is returned (in Verdict.Err) for a call to a server the
// configuration does not name.
var ErrUnknownServer = errors.New("unknown server")
