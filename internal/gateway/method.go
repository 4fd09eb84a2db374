package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// This file holds the requests aegis decides other than tools/call
// (DESIGN.md R1, "every method"): what each method acts on, and so what
// the pipeline derives from it.
//
// A tools/call is a [Call] with Method "". Any other request is a Call
// whose Method names it, whose Tool names what the method acts on (the
// prompt of prompts/get, the URI of resources/read, the prompt or URI
// template of a completion; "" for a request of the server), and whose
// Arguments are what the capabilities are derived from. The pin, shaping
// and schema steps are a tool's and do not apply; DLP, derivation, the
// policy, aegis's own files, egress, caps and the record do.

// Method is what aegis knows of an MCP method it decides.
type Method struct {
	// FromServer: the server sends it to the client (sampling,
	// elicitation, roots); otherwise the client sends it to the server.
	FromServer bool
	// Tier is the risk tier of a method whose effect aegis knows.
	Tier capability.Tier
	kind methodKind
}

type methodKind uint8

const (
	methodOther      methodKind = iota // a configured method aegis knows nothing of: unbound
	methodResource                     // derives from params.uri
	methodPrompt                       // params.name and params.arguments
	methodCompletion                   // params.ref, params.argument, params.context
	methodServer                       // a request of the server: names nothing, derives nothing
	methodConnect                      // a sandboxed server's own connection: its capability given
)

// MethodConnect is the method a sandboxed server's own connection through
// aegis's egress proxy is decided and recorded under: not an MCP method,
// but an action of the server (allowed by `method: egress/connect`) with
// the connection's net.connect capability, which the policy's host rules
// decide as they decide a call's.
const MethodConnect = "egress/connect"

// methods are the MCP methods aegis decides besides tools/call. A request
// of any other method is refused by the relay unless the configuration
// lists it (Server.Methods); then it is decided as an unbound action.
var methods = map[string]Method{
	"resources/read":      {Tier: capability.TierDataRead, kind: methodResource},
	"resources/subscribe": {Tier: capability.TierDataRead, kind: methodResource},
	"prompts/get":         {Tier: capability.TierDataRead, kind: methodPrompt},
	// A completion suggests values for an argument; a server that
	// completes a path lists a directory, so a prompt's binding applies
	// to the value being completed.
	"completion/complete":    {Tier: capability.TierReadOnly, kind: methodCompletion},
	"sampling/createMessage": {FromServer: true, Tier: capability.TierMutating, kind: methodServer},
	"elicitation/create":     {FromServer: true, Tier: capability.TierMutating, kind: methodServer},
	"roots/list":             {FromServer: true, Tier: capability.TierDataRead, kind: methodServer},
	MethodConnect:            {FromServer: true, Tier: capability.TierDataRead, kind: methodConnect},
}

// relayed are the client requests relayed without a decision: the
// protocol's own housekeeping, which acts on nothing of the server's
// (listings are metadata; tools/list is checked by the pin step). Every
// other request is decided: the methods above, tools/call, and methods
// aegis has never heard of, which are refused unless configured.
var relayed = map[string]bool{
	"initialize":               true,
	"ping":                     true,
	"server/discover":          true,
	"subscriptions/listen":     true,
	"logging/setLevel":         true,
	"tools/list":               true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/unsubscribe":    true,
	"prompts/list":             true,
}

// Relayed reports whether a client request of method is relayed without a
// decision (see relayed). The server's ping is relayed too.
func Relayed(method string) bool { return relayed[method] }

// DecidedMethod reports whether aegis decides requests of method (other
// than tools/call, which it always decides), and what it knows of it.
func DecidedMethod(method string) (Method, bool) {
	m, ok := methods[method]
	return m, ok
}

// DecidedMethods returns the methods [DecidedMethod] knows.
func DecidedMethods() []string {
	out := make([]string, 0, len(methods))
	for m := range methods {
		out = append(out, m)
	}
	return out
}

// Request runs a request of an MCP method other than tools/call through
// the pipeline in the session's name, as [Session.Call] runs a tool call:
// params is the request's params object as sent (nil: none). A request
// the relay should not pass on (denied, or an ask no person can answer)
// has Forward false and a Reason to answer it with. A method aegis does
// not decide and the configuration does not list is refused, recorded.
func (s *Session) Request(ctx context.Context, method string, params []byte) (Outcome, error) {
	return s.request(ctx, method, params, false, nil)
}

// RequestInput is [Session.Request] for a request that may retry a
// multi-round-trip request (prompts/get, resources/read): in, if not nil,
// says what the retry brings (see [Input]); its Responses are in params
// too.
func (s *Session) RequestInput(ctx context.Context, method string, params []byte, in *Input) (Outcome, error) {
	return s.request(ctx, method, params, false, in)
}

// ServerRequest is [Session.Request] for a request the server sends the
// client: sampling/createMessage, elicitation/create, roots/list, or a
// method the configuration lists. A client's method sent by the server
// (or the other way round) is refused under aegis:method.
func (s *Session) ServerRequest(ctx context.Context, method string, params []byte) (Outcome, error) {
	return s.request(ctx, method, params, true, nil)
}

func (s *Session) request(ctx context.Context, method string, params []byte, fromServer bool, in *Input) (Outcome, error) {
	if method == "" || method == policy.ToolsCall {
		return Outcome{Effect: policy.Deny}, errors.New("gateway: Session.Request of tools/call: use Session.Call")
	}
	c := s.requestCall(method, params, fromServer)
	in.apply(c)
	m := s.mem.Get().(*callMem)
	defer s.mem.Put(m)
	v, seq, err := s.run(ctx, c, m, true)
	if err != nil {
		return Outcome{Effect: policy.Deny}, err
	}
	if fromServer && method == "roots/list" && v.Effect == policy.Allow {
		s.rootsAsked.Store(true)
	}
	out := outcomeOf(c, &v, seq, "request")
	if v.Effect == policy.Ask && s.cfg.Approvals != nil && !fromServer {
		// The server's requests are decided on the goroutine that reads
		// the server: they are not held.
		if out, err = s.approve(ctx, c, &v, seq, "request", out); err != nil {
			return out, err
		}
	}
	// A prompt named as a tool that runs unbound runs unbound too: a
	// server such as mcp-server-commands runs the same command for its
	// tool and its prompt, and the prompt must not be the way round.
	if t := s.srv.Tools[c.Tool]; out.Forward && method == policy.PromptsGet && t != nil && t.RunUnbound {
		out.RunUnbound = true
	}
	return out, nil
}

// requestCall is the gateway call of a request of method in s's name.
func (s *Session) requestCall(method string, params []byte, fromServer bool) *Call {
	c := s.facts("", nil)
	RequestOf(c, method, params, fromServer)
	s.methodStep(c)
	return c
}

// RequestOf fills c, a call with its session facts, as the request of
// method with params (nil: none), sent by the server to the client when
// fromServer is set, else by the client. Params it cannot read make a call
// that is refused (RuleUndecidable), with the params as its arguments, for
// the record.
func RequestOf(c *Call, method string, params []byte, fromServer bool) {
	if len(params) == 0 {
		params = emptyObject
	}
	c.Method, c.FromServer = method, fromServer
	name, arguments, resource, err := requestTarget(method, params)
	if err != nil {
		c.Tool, c.Arguments = "", params
		c.Refuse = &Refusal{Rule: RuleUndecidable, Err: fmt.Errorf("%s: %w", method, err)}
		return
	}
	c.Tool, c.Arguments, c.Resource = name, arguments, resource
}

// methodStep is the pin step of a request of another method: a method
// aegis does not decide is refused unless the server's configuration
// lists it, and so is a method sent the wrong way.
func (s *Session) methodStep(c *Call) {
	if c.Refuse != nil {
		return
	}
	m, known := methods[c.Method]
	switch {
	case !known && s.srv.Methods[c.Method] == nil:
		c.Refuse = &Refusal{Rule: RuleMethod, Err: fmt.Errorf("method %q is not one aegis decides, and the configuration does not list it", c.Method)}
	case known && m.kind == methodConnect && c.Connect == nil:
		// Only the egress proxy asks this, never a message on the wire.
		c.Refuse = &Refusal{Rule: RuleMethod, Err: fmt.Errorf("method %q is aegis's own, not one a peer may send", c.Method)}
	case known && m.FromServer != c.FromServer:
		from := "the client"
		if c.FromServer {
			from = "the server"
		}
		c.Refuse = &Refusal{Rule: RuleMethod, Err: fmt.Errorf("method %q was sent by %s, which never sends it", c.Method, from)}
	}
}

// Connect decides, and records, a sandboxed server's own connection
// through aegis's egress proxy: the action MethodConnect with c, the
// connection's net.connect capability. The egress gate is the proxy's, at
// dial time (it resolves the name once and dials only a checked address),
// so the pipeline's own egress step is skipped here.
func (s *Session) Connect(ctx context.Context, c capability.Capability) (Outcome, error) {
	target := c.URL
	if target == "" {
		target = net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
	}
	call := s.facts(target, emptyObject)
	call.Method, call.FromServer, call.Connect = MethodConnect, true, &c
	m := s.mem.Get().(*callMem)
	defer s.mem.Put(m)
	v, seq, err := s.run(ctx, call, m, true)
	if err != nil {
		return Outcome{Effect: policy.Deny}, err
	}
	return outcomeOf(call, &v, seq, "connection"), nil
}

// ConnectRefused records a sandboxed server's own connection that the
// policy allowed ([Session.Connect]) and the egress gate then refused at
// dial time (an address of the name that the gate blocks: a rebinding),
// under RuleEgress with why: the chain must not leave it looking made.
func (s *Session) ConnectRefused(ctx context.Context, c capability.Capability, why string) error {
	if s.rec.Log == nil {
		return nil
	}
	target := c.URL
	if target == "" {
		target = net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
	}
	call := s.facts(target, nil)
	call.Method, call.FromServer = MethodConnect, true
	return s.rec.refusedAtDial(ctx, call, c, why)
}

// ConnectRuntime records a sandboxed server's own connection that aegis
// lets through whatever the policy, because the server's program needs it
// to start (a package runner fetching the server from its registry), as
// the sandbox grants a program its runtime's files: allowed under
// RuleRuntime, with why.
func (s *Session) ConnectRuntime(ctx context.Context, c capability.Capability, why string) error {
	if s.rec.Log == nil {
		return nil
	}
	call := s.facts(net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), nil)
	call.Method, call.FromServer = MethodConnect, true
	return s.rec.runtime(ctx, call, c, why)
}

// requestName is what a request of method names, "" when it cannot be
// read (the request was refused then).
func requestName(method string, params []byte) string {
	if len(params) == 0 {
		return ""
	}
	name, _, _, _ := requestTarget(method, params)
	return name
}

// RuleMethod is the rule id recorded for a request of a method aegis does
// not know and the configuration does not list.
const RuleMethod = "aegis:method"

// requestTarget reads what a request of method names and the arguments its
// capabilities derive from. For a resource, arguments are params (the URI
// is at /uri); for a prompt, params.arguments; for a completion, the
// arguments the prompt would get: the context's, with the argument being
// completed. resource says that name is a URI or URI template.
func requestTarget(method string, params []byte) (name string, arguments []byte, resource bool, err error) {
	kind := methods[method].kind
	switch kind {
	case methodResource, methodPrompt, methodCompletion:
		// Strictly, as the relay reads messages, whatever the caller: a
		// duplicate key must not read one way here and another in the
		// server.
		if first, err := args.Validate(params, maxParamsDepth); err != nil || first != '{' {
			return "", nil, false, errors.New("params must be a strict JSON object")
		}
	default:
		return "", params, false, nil
	}
	switch kind {
	case methodResource:
		var p struct {
			URI *string `json:"uri"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.URI == nil {
			return "", nil, false, errors.New("params.uri must be a string")
		}
		return *p.URI, params, true, nil
	case methodPrompt:
		var p struct {
			Name      *string         `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Name == nil {
			return "", nil, false, errors.New("params.name must be a string")
		}
		a := []byte(p.Arguments)
		switch {
		case len(a) == 0 || string(a) == "null":
			a = emptyObject
		case a[0] != '{':
			return "", nil, false, errors.New("params.arguments must be an object")
		}
		return *p.Name, a, false, nil
	}
	return completionTarget(params)
}

// maxParamsDepth bounds the nesting of the params read here; the relay
// bounds the messages it reads more tightly.
const maxParamsDepth = 1 << 10

// completionTarget is requestTarget for completion/complete.
func completionTarget(params []byte) (name string, arguments []byte, resource bool, err error) {
	var p struct {
		Ref *struct {
			Type string  `json:"type"`
			Name *string `json:"name"`
			URI  *string `json:"uri"`
		} `json:"ref"`
		Argument *struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
		Context *struct {
			Arguments map[string]string `json:"arguments"`
		} `json:"context"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", nil, false, fmt.Errorf("params: %v", err)
	}
	if p.Ref == nil || p.Argument == nil {
		return "", nil, false, errors.New("params.ref and params.argument are required")
	}
	a := map[string]string{}
	if p.Context != nil {
		for k, v := range p.Context.Arguments {
			a[k] = v
		}
	}
	a[p.Argument.Name] = p.Argument.Value
	arguments, err = json.Marshal(a)
	if err != nil {
		return "", nil, false, err
	}
	switch {
	case p.Ref.Type == "ref/prompt" && p.Ref.Name != nil:
		return *p.Ref.Name, arguments, false, nil
	case p.Ref.Type == "ref/resource" && p.Ref.URI != nil:
		return *p.Ref.URI, arguments, true, nil
	}
	return "", nil, false, fmt.Errorf("params.ref: want a ref/prompt with a name or a ref/resource with a uri")
}

// methodRoute sets r's tool configuration and binding for a request of a
// method other than tools/call, and reports whether aegis knows what the
// request does (a bound request) and its tier.
func (e *Engine) methodRoute(c *Call, r *route) (bound bool, tier capability.Tier) {
	s := r.s
	r.t = s.Methods[c.Method]
	m, known := methods[c.Method]
	if !known {
		return false, capability.TierUnknown
	}
	switch m.kind {
	case methodResource:
		r.b = resourceBinding(c.Method, c.Tool)
		return true, m.Tier
	case methodPrompt:
		if r.b = s.Prompts[c.Tool]; r.b != nil {
			return true, r.b.Tier
		}
		return false, capability.TierUnknown
	case methodCompletion:
		if c.Resource {
			// A URI template's variable: the template names no resource
			// until the server fills it in, which aegis does not model.
			return true, m.Tier
		}
		if r.b = s.Prompts[c.Tool]; r.b != nil {
			return true, m.Tier
		}
		return false, capability.TierUnknown
	}
	return true, m.Tier
}

// networkSchemes are the URI schemes whose resource a server fetches over
// the network.
var networkSchemes = map[string]bool{"http": true, "https": true, "ws": true, "wss": true, "ftp": true}

// resourceBinding returns the binding of a resource request for uri: a
// file: URI reads that file, a network URI connects to its host, and a
// URI of another scheme (a server's own namespace: memo://, test://)
// names nothing aegis can see beyond the request itself. A URI without a
// scheme binds /uri as a URL, whose derivation refuses it.
func resourceBinding(method, uri string) *binding.Binding {
	b := &binding.Binding{Tool: method, Tier: methods[method].Tier}
	scheme, ok := uriScheme(uri)
	if ok && scheme != "file" && !networkSchemes[scheme] {
		return b
	}
	b.Args = []binding.Arg{uriArg}
	return b
}

var uriArg = binding.Arg{Pointer: constPointer("/uri"), Kind: capability.NetConnect, Form: binding.FormURL}

func constPointer(s string) args.Pointer {
	p, err := args.ParsePointer(s)
	if err != nil {
		panic(err)
	}
	return p
}

// uriScheme returns the scheme of uri, lower-cased, if it starts with one
// (RFC 3986: a letter, then letters, digits, "+", "-" or ".", then ":").
func uriScheme(uri string) (string, bool) {
	i := strings.IndexByte(uri, ':')
	if i <= 0 {
		return "", false
	}
	for j, c := range []byte(uri[:i]) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", false
		}
	}
	return strings.ToLower(uri[:i]), true
}
