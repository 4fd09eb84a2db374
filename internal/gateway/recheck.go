package gateway

import (
	"fmt"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// RuleUndecidable is the rule id recorded for a call that aegis refused
// before any policy could decide it (an unknown server, arguments that are
// not strict JSON or over a limit, an argument that cannot be
// canonicalised). Ids with the "aegis:" prefix name aegis's own rules; a
// policy cannot use them.
const RuleUndecidable = "aegis:undecidable"

// Recheck decides a recorded call again, from its chain entry alone, under
// e's policy: the entry's capabilities, principal, roles, origin, taint, and
// whether the tool was bound and its tier; and under aegis's own rule for
// its files ([RuleSelf]), which no policy overrides. Entries aegis refused before the
// policy (rule [RuleUndecidable]) are refused again: ok is false for them,
// and v is a denial.
func (e *Engine) Recheck(ent *record.Entry) (v Verdict, ok bool) {
	ok = e.recheckInto(&v, new(recheckRequest), ent)
	return v, ok
}

// recheckRequest is a request with room for the capabilities of most
// entries, so that a recheck allocates once.
type recheckRequest struct {
	req  policy.Request
	caps [1]capability.Capability
}

// recheckInto is Recheck writing the verdict to v, with the request in rr,
// which v then refers to.
func (e *Engine) recheckInto(v *Verdict, rr *recheckRequest, ent *record.Entry) (ok bool) {
	for _, r := range ent.Rules {
		if strings.HasPrefix(r, "aegis:") {
			*v = deny(fmt.Errorf("refused by aegis before the policy (%s): %s", r, ent.Reason))
			return false
		}
	}
	req := &rr.req
	*req = policy.Request{
		Server:    ent.Server,
		Method:    ent.Method,
		Tool:      ent.Tool,
		Principal: ent.Principal,
		Roles:     ent.Roles,
		Taint:     ent.Taint,
		Bound:     ent.Bound,
	}
	switch ent.Origin {
	case capability.Interactive.String():
		req.Origin = capability.Interactive
	case capability.Unattended.String():
		req.Origin = capability.Unattended
	}
	if ent.Bound && ent.Tier != "" {
		t, err := capability.ParseTier(ent.Tier)
		if err != nil {
			*v = deny(fmt.Errorf("entry %d: %w", ent.Seq, err))
			return false
		}
		req.Tier = t
	}
	caps := rr.caps[:0]
	if len(ent.Caps) > len(rr.caps) {
		caps = make([]capability.Capability, 0, len(ent.Caps))
	}
	caps, err := record.AppendCapabilities(caps, ent.Caps)
	if err != nil {
		*v = deny(fmt.Errorf("entry %d: %w", ent.Seq, err))
		return false
	}
	// An entry recorded before paths were canonical in NFC may hold
	// another spelling: the policy matches every spelling alike, and so
	// is the path shown.
	for i := range caps {
		if c := &caps[i]; c.Kind == capability.FSRead || c.Kind == capability.FSWrite {
			if n, ok := capability.NormPath(c.Path); ok {
				c.Path = n
			}
		}
	}
	req.Caps = caps
	if s := e.servers[ent.Server]; s != nil {
		req.FoldCase = s.CaseInsensitive
	}
	e.decideInto(v, req, nil)
	// aegis's own files are refused whatever the policy says, now as when
	// the call was made: an entry allowed before they were protected (or
	// protected elsewhere) would be refused today.
	if err := e.selfCheck(v.Caps, req.FoldCase); err != nil {
		v.refuse(err)
	}
	return true
}

// RecheckChain decides every entry of the chain in dir again, as
// [Engine.Recheck] does, and calls fn with each entry and its new verdict
// in chain order. The decisions are made on all cores while the chain is
// read; fn runs on the caller's goroutine, one entry at a time. The chain
// is read as [chain.Scan] reads it: a break gives a *chain.BreakError, and
// an error from fn stops the replay and is returned as is. ent is decoded
// as [chain.ScanOptions] Light decodes it: the fields a decision is not
// made on (Session, Time, and the digests but Prev and Hash) are zero. fn
// MUST NOT keep ent or v after it returns: v refers to a request that a
// later entry's decision reuses (its Decision's rules and reason, and its
// Caps, would change), so what fn needs of v it takes during the call.
func (e *Engine) RecheckChain(dir string, fn func(ent *record.Entry, v Verdict, ok bool) error) error {
	return chain.ScanMapWith(dir, &chain.ScanOptions{Light: true}, func(ent *record.Entry, r *rechecked) {
		r.ok = e.recheckInto(&r.v, &r.rr, ent)
	}, func(ent *record.Entry, r *rechecked) error {
		return fn(ent, r.v, r.ok)
	})
}

// rechecked is an entry's result in RecheckChain, with the request its
// verdict refers to, so that deciding an entry allocates nothing for it.
type rechecked struct {
	v  Verdict
	ok bool
	rr recheckRequest
}
