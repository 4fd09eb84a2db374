package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/chain"
)

// Appender makes a chain entry durable; *chain.Log is one.
type Appender interface {
	Append(ctx context.Context, e *chain.Entry) (seq uint64, hash [32]byte, err error)
}

// Recorder checks calls and records each decision in the chain before it
// returns: what [Recorder.Call] allows has a durable entry (DESIGN.md R25).
type Recorder struct {
	Engine *Engine
	Log    Appender
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Call checks c and appends its entry. When the entry cannot be made
// durable the call is refused: the returned Verdict denies and the error
// says why. schemaHash is the hash of the tool's pinned input schema, zero
// when unknown.
func (r *Recorder) Call(ctx context.Context, c *Call, schemaHash [32]byte) (Verdict, error) {
	v, argsHash := r.Engine.check(c, true)
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	e := r.entry(c, &v, schemaHash, now())
	e.ArgsHash = argsHash
	if _, _, err := r.Log.Append(ctx, e); err != nil {
		refused := deny(fmt.Errorf("the decision could not be recorded, so the call is refused"))
		refused.Caps, refused.Bound, refused.Tier = v.Caps, v.Bound, v.Tier
		return refused, fmt.Errorf("recording the decision: %w", err)
	}
	return v, nil
}

// entry builds the chain entry of a decision: the decision axes, never the
// raw arguments.
func (r *Recorder) entry(c *Call, v *Verdict, schemaHash [32]byte, at time.Time) *chain.Entry {
	e := &chain.Entry{
		Time:           at,
		Session:        c.Session,
		Principal:      c.Principal,
		Roles:          c.Roles,
		Origin:         c.Origin.String(),
		Server:         c.Server,
		Tool:           c.Tool,
		ToolSchemaHash: schemaHash,
		Taint:          c.Taint,
		Bound:          v.Bound,
		Caps:           CapsOf(v.Caps),
		Decision:       v.Effect.String(),
		Mode:           r.Engine.Policy().Mode().String(),
		Reason:         v.Reason(),
		PolicyHash:     r.Engine.Policy().Hash(),
	}
	if v.Bound {
		e.Tier = v.Tier.String()
	}
	if v.Err != nil {
		e.Rules = []string{RuleOf(v)}
	} else {
		e.Rules = v.Decision.Rules()
		if w := v.Decision.Would(); w != v.Effect {
			e.Would = w.String()
		}
	}
	return e
}

// hashArgs is the SHA-256 of the arguments' RFC 8785 canonical form, so
// that two spellings of the same arguments hash alike (SPEC.md, args_hash).
// doc holds the arguments decoded, or nothing if they were not strict JSON.
// Arguments that have no exact canonical form (a number beyond float64's
// precision) or are not strict JSON are hashed as their raw bytes under
// another domain, so the two can never be confused.
func hashArgs(doc *args.Doc, raw []byte) [32]byte {
	h := sha256.New()
	if root := doc.Root(); root.Kind() != args.Invalid {
		if canon, err := root.AppendCanonical(nil); err == nil {
			h.Write([]byte("aegis.args.jcs.v1\x00"))
			h.Write(canon)
			return [32]byte(h.Sum(nil))
		}
	}
	h.Write([]byte("aegis.args.raw.v1\x00"))
	h.Write(raw)
	return [32]byte(h.Sum(nil))
}

// CapsOf converts capabilities to the chain's form.
func CapsOf(caps []capability.Capability) []chain.Cap {
	out := make([]chain.Cap, len(caps))
	for i, c := range caps {
		out[i] = chain.Cap{
			Kind: c.Kind.String(), Path: c.Path,
			Scheme: c.Scheme, Host: c.Host, Port: c.Port, URL: c.URL,
			Program: c.Program, Argv: c.Argv, Shell: c.Shell, Command: c.Command,
			IDKind: c.IDKind, ID: c.ID,
		}
	}
	return out
}
