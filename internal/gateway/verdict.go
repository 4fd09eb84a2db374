package gateway

import (
	"errors"
	"fmt"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// The rule ids of aegis's own checks. A refusal by one of them is recorded
// under its id; recheck keeps such refusals, since no policy decided them.
const (
	RuleSchema      = "aegis:schema"
	RuleIdentity    = "aegis:identity"
	RuleShape       = "aegis:shape"
	RuleRelativeURL = "aegis:relative-url"
	RuleEgress      = "aegis:egress"
	RuleProvenance  = "aegis:provenance"
	RuleDLP         = "aegis:dlp"
	RuleCap         = "aegis:cap"
	RuleUnattended  = "aegis:unattended"
	RuleUndelivered = "aegis:undelivered" // a call allowed, then not served: the server died or did not answer
	RuleRuntime     = "aegis:runtime"     // a sandboxed server's connection its program needs to start (a package runner's registry)
)

// refusal is the error of a refusal by one of aegis's own rules.
func refusal(rule string, format string, a ...any) error {
	return &Refusal{Rule: rule, Err: fmt.Errorf(format, a...)}
}

// Call is one tools/call with the session facts aegis knows about it.
type Call struct {
	Session   string
	Principal string
	Roles     []string
	Origin    capability.Origin
	Taint     bool
	Turn      int
	Server    string
	// Method is the MCP request: "" for a tools/call, else one of the
	// methods of method.go, with Tool what it names (see there).
	Method string
	Tool   string
	// Resource says Tool is a URI or URI template, not a name.
	Resource bool
	// FromServer says the request is the server's, to the client.
	FromServer bool
	// Connect is the capability of a sandboxed server's own connection
	// (Method MethodConnect), given rather than derived.
	Connect *capability.Capability
	// RootsAsked says the server has asked the client for its roots in
	// this session: a server whose allowed directories are its roots from
	// then on resolves relative paths against directories aegis did not
	// see, so the server's Bases no longer apply and a relative path is
	// refused.
	RootsAsked bool
	// Arguments is the raw JSON arguments object as the model wrote it. It
	// must not change while Check runs, which reads it in place.
	Arguments []byte
	// Refuse, if set, refuses the call whatever the policy says (a step
	// before the policy refused it: a held tool). The capabilities are
	// still derived, for the record.
	Refuse *Refusal
	// Schema is the input schema of the tool as pinned, and SchemaKey
	// the hash that identifies it (the pin's full hash). With a schema the
	// arguments are checked against it, closed (R11); nil skips the check.
	Schema    []byte
	SchemaKey [32]byte
	// InputResponses are the answers a retry of a multi-round-trip request
	// brings (see [Input]), raw JSON; nil for any other call. DLP scans
	// them as arguments, and the envelope keeps them.
	InputResponses []byte
	// Continues says the call continues one the session already counted
	// against its caps (see [Input]); it is decided all the same.
	Continues bool
	// InBand and Answer are the call's [Input.InBand] and [Input.Answer].
	InBand bool
	Answer *Answer
}

// Verdict is the engine's answer for one call. Effect is what happens to
// the call: in a shadow policy a call the rules would deny is still allowed,
// and Decision.Would says so.
type Verdict struct {
	Effect   policy.Effect
	Decision policy.Decision // valid when Err is nil and the call reached the policy
	Caps     []capability.Capability
	Bound    bool
	Tier     capability.Tier
	// Ask, if set, is the check that turned an allowed call into an ask
	// (a DLP finding whose action is ask); Reason then gives its reason.
	Ask *Refusal
	// Findings are the DLP findings in the arguments that did not refuse
	// the call (redacted or reported): by kind and location, never value.
	Findings []dlp.Located
	// Origin and Taint are the session facts the policy saw: the call's,
	// merged with what the session store knows (taint is never lost).
	// Zero when the call did not reach the policy.
	Origin capability.Origin
	Taint  bool
	// Err is why the call could not be decided (unknown server, arguments
	// over a limit or not strict JSON, an argument that cannot be
	// canonicalised). A non-nil Err always comes with Effect Deny.
	Err error
	// Arguments are the arguments as they would be forwarded; nil when the
	// call is refused. They are read-only: they may be the Call's own
	// Arguments, or text that the strings of Caps share.
	Arguments []byte
	// InputResponses are the call's answers (Call.InputResponses) as they
	// would be forwarded, secrets redacted; nil when the call has none or
	// is refused.
	InputResponses []byte
}

// Reason says in one line why the call got its effect.
func (v *Verdict) Reason() string {
	if v.Err != nil {
		return v.Err.Error()
	}
	if v.Ask != nil && v.Effect == policy.Ask {
		return v.Ask.Error()
	}
	r := v.Decision.Reason()
	if len(v.Findings) > 0 {
		r += "; dlp found " + findingsNote(v.Findings)
	}
	return r
}

// Rules returns the rules that decided v: the policy's, and aegis's own
// when one of its checks refused the call or made it an ask.
func (v *Verdict) Rules() []string {
	if v.Err != nil {
		return []string{RuleOf(v)}
	}
	rules := v.Decision.Rules()
	if v.Ask != nil {
		rules = append(rules, v.Ask.Rule)
	}
	return rules
}

// Refusal is an error that refuses a call before or beside the policy, by
// one of aegis's own rules (a rule id with the "aegis:" prefix, which no
// policy can use): a held tool, an off-schema argument, a cap reached. The
// chain records Rule as the deciding rule.
type Refusal struct {
	Rule string
	Err  error
}

func (r *Refusal) Error() string { return r.Err.Error() }

func (r *Refusal) Unwrap() error { return r.Err }

// RuleOf returns the aegis rule that refused v, [RuleUndecidable] unless
// v.Err is a [Refusal]; "" when v.Err is nil.
func RuleOf(v *Verdict) string {
	if v.Err == nil {
		return ""
	}
	var r *Refusal
	if errors.As(v.Err, &r) {
		return r.Rule
	}
	return RuleUndecidable
}

func deny(err error) Verdict {
	return Verdict{Effect: policy.Deny, Err: err}
}

// refuse makes v a denial for err that keeps what the call derived and
// the session facts the policy saw, for the record.
func (v *Verdict) refuse(err error) {
	*v = Verdict{Effect: policy.Deny, Err: err, Caps: v.Caps, Bound: v.Bound, Tier: v.Tier, Origin: v.Origin, Taint: v.Taint}
}
