package gateway

import (
	"errors"
	"fmt"

	"github.com/aegis-mcp/aegis/internal/pin"
)

// RulePin is the rule id recorded for a call to a held tool, or to a tool
// whose pinned definition cannot be read.
const RulePin = "aegis:pin"

// pinStep is the pipeline's second step (R5): it looks c's tool up in the
// pinned definitions and sets what the later steps need — the pinned input
// schema for the closed-schema step, or a refusal: a held tool (its input
// schema changed since it was pinned), pins aegis cannot read, or a tool
// the server never listed, which has no schema to check against (unless the
// server's schema check is off). Without pins it does nothing.
func (s *Session) pinStep(c *Call) {
	if s.cfg.Pins == nil {
		return
	}
	p, pinned, err := s.cfg.Pins.Lookup(c.Tool)
	switch {
	case err != nil:
		// Pins aegis cannot read cannot say the tool is the approved one.
		s.logger.Error("reading the pins", "err", err)
		c.Refuse = &Refusal{Rule: RulePin, Err: errors.New("the pinned tool definitions cannot be read")}
	case pinned && p.Held():
		c.Refuse = &Refusal{Rule: RulePin, Err: fmt.Errorf("tool %q changed its input schema since it was pinned and is held until a person accepts the change", c.Tool)}
		c.SchemaKey = p.Pending.Full
	case pinned && s.staleBinding(c.Tool, p):
		c.Refuse = &Refusal{Rule: RulePin, Err: fmt.Errorf("the binding of tool %q was reviewed for another input schema (shape %.12s, now %.12s): propose and review it again (aegis bindings propose)", c.Tool, s.srv.Bindings[c.Tool].Shape, p.Shape)}
		c.SchemaKey = p.Full
	case pinned:
		c.SchemaKey = p.Full
		c.Schema, err = s.inputSchema(p)
		if err != nil {
			c.Refuse = &Refusal{Rule: RuleSchema, Err: err}
		}
	case !s.srv.SchemaOff:
		// The closed schema is the one the server listed: a tool the
		// client calls without its having been listed has none.
		c.Refuse = &Refusal{Rule: RuleSchema, Err: fmt.Errorf("tool %q was never listed by the server, so its arguments cannot be checked against its schema", c.Tool)}
	}
}

// staleBinding reports whether the tool's binding was reviewed for
// another shape of its definition than the pinned one.
func (s *Session) staleBinding(tool string, p pin.Pin) bool {
	b := s.srv.Bindings[tool]
	return b != nil && b.Shape != "" && b.Shape != p.Shape.String()
}

// inputSchema returns the input schema of a pinned definition, parsed
// once per definition.
func (s *Session) inputSchema(p pin.Pin) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[p.Full]; ok {
		return sch, nil
	}
	d, err := pin.Parse(p.Def)
	if err != nil {
		return nil, fmt.Errorf("the pinned definition: %w", err)
	}
	sch := d.InputSchema
	if sch == nil {
		sch = []byte(`{"type":"object"}`) // no schema listed: no arguments
	}
	if len(s.schemas) > 4096 {
		clear(s.schemas)
	}
	s.schemas[p.Full] = sch
	return sch, nil
}
