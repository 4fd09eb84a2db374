package gateway

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// scanArguments looks for secrets in the arguments as they will be
// forwarded (R17). A finding whose action is deny refuses the call; redact
// replaces its span and re-decodes doc; ask and report are returned in
// found (withFindings turns an allowed call into an ask).
func (e *Engine) scanArguments(s *Server, doc *args.Doc, cur []byte) (out []byte, found []dlp.Located, err error) {
	return e.scan(s, doc, cur, "the arguments", "")
}

// scan is scanArguments of what (in words: "the arguments"), doc holding
// cur decoded; the pointers of the findings get prefix.
func (e *Engine) scan(s *Server, doc *args.Doc, cur []byte, what, prefix string) (out []byte, found []dlp.Located, err error) {
	if s.DLP == nil {
		return cur, nil, nil
	}
	found = dlp.ScanValue(doc.Root(), nil)
	if len(found) == 0 {
		return cur, nil, nil
	}
	if prefix != "" {
		for i := range found {
			found[i].Pointer = prefix + found[i].Pointer
		}
	}
	act, _ := s.DLP.Arguments.DecideLocated(found)
	if act == dlp.ActionDeny {
		var denied []dlp.Located
		for _, f := range found {
			if s.DLP.Arguments.For(f.Kind) == dlp.ActionDeny {
				denied = append(denied, f)
			}
		}
		return nil, nil, refusal(RuleDLP, "%s hold a secret: %s", what, findingsNote(denied))
	}
	redact := false
	for _, f := range found {
		redact = redact || s.DLP.Arguments.Redacts(f.Kind)
	}
	if redact {
		out, err := dlp.AppendRedacted(make([]byte, 0, len(cur)+32), doc.Root(), s.DLP.Arguments.Redacts)
		if err != nil {
			return nil, nil, refusal(RuleDLP, "redacting %s: %v", what, err)
		}
		if err := doc.Decode(out, &e.limits); err != nil {
			return nil, nil, refusal(RuleDLP, "%s, redacted: %v", what, err)
		}
		cur = out
	}
	return cur, found, nil
}

// withFindings makes an allowed call an ask when a finding in its
// arguments asks for a person (R17), and keeps the findings for the record.
func withFindings(v *Verdict, s *Server, found []dlp.Located) {
	if len(found) == 0 {
		return
	}
	v.Findings = found
	var asks []dlp.Located
	for _, f := range found {
		if s.DLP.Arguments.For(f.Kind) == dlp.ActionAsk {
			asks = append(asks, f)
		}
	}
	if len(asks) > 0 && v.Effect == policy.Allow {
		v.Effect = policy.Ask
		v.Ask = &Refusal{Rule: RuleDLP, Err: fmt.Errorf("the arguments hold what may be a secret, so a person decides: %s", findingsNote(asks))}
	}
}

// findingsNote names findings by kind and location, never by value, and at
// most a few of them.
func findingsNote(fs []dlp.Located) string {
	var b strings.Builder
	for i, f := range fs {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(fs)-3)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		where := "value"
		if f.InKey {
			where = "key"
		}
		fmt.Fprintf(&b, "%s in the %s at %s", f.Kind, where, printablePointer(f.Pointer))
	}
	return b.String()
}

// printablePointer caps a pointer (which holds model-written keys) for a
// reason.
func printablePointer(p string) string {
	if len(p) > 80 {
		p = strings.ToValidUTF8(p[:80], "") + "…"
	}
	return strconv.Quote(p)
}
