package gateway

import (
	"errors"

	"github.com/aegis-mcp/aegis/internal/shape"
)

// shape is the pipeline's fourth step (R12, R13): the tool's pinned,
// cleared and identity fields and the server's template neutralisation,
// applied by package shape to the arguments in sc (cur, as the model wrote
// them). It runs before the closed schema, which checks what is forwarded.
// When anything changed, sc.w.Doc holds the shaped arguments, which it
// returns; otherwise it returns cur.
func (e *Engine) shape(c *Call, s *Server, t *Tool, sc *scratch, cur []byte) ([]byte, error) {
	var f *shape.Fields
	if t != nil {
		f = &t.Fields
	}
	if f == nil && s.Templates == nil {
		return cur, nil
	}
	p := shape.Principal{Name: c.Principal}
	if f != nil && len(f.Identity) > 0 {
		p.Attrs = e.principals[c.Principal]
	}
	sc.w.Out, sc.w.Limits = sc.mem.out, &e.limits
	out, err := f.Apply(&sc.w, cur, s.Templates, &p)
	sc.mem.out, sc.w.Out = sc.w.Out, nil // the call's storage keeps the buffer
	return out, ruleOfShape(err)
}

// ruleOfShape turns a refusal of package shape into one of aegis's rules:
// aegis:identity, aegis:shape or aegis:relative-url.
func ruleOfShape(err error) error {
	if err == nil {
		return nil // before errors.As, whose target would escape: no allocation
	}
	var r *shape.Refusal
	if errors.As(err, &r) {
		return &Refusal{Rule: "aegis:" + r.Check, Err: r.Err}
	}
	return err
}
