package gateway

import (
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/schema"
)

// schemaCache holds the compiled closed schemas of the tools, by server,
// tool and the hash of the pinned definition. It is bounded: a server that
// keeps changing its schemas cannot grow it without end.
type schemaCache struct {
	mu sync.Mutex
	m  map[schemaKey]*schemaEntry
}

type schemaKey struct {
	server, tool string
	hash         [32]byte
}

type schemaEntry struct {
	once sync.Once
	s    *schema.Schema
	err  error
}

const maxSchemas = 4096

func (c *schemaCache) get(k schemaKey, inputSchema []byte, o *schema.Options) (*schema.Schema, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[schemaKey]*schemaEntry)
	}
	e := c.m[k]
	if e == nil {
		for old := range c.m {
			if len(c.m) < maxSchemas {
				break
			}
			delete(c.m, old)
		}
		e = &schemaEntry{}
		c.m[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.s, e.err = schema.Compile(inputSchema, o) })
	return e.s, e.err
}

// closedSchema checks the arguments in doc against the tool's pinned input
// schema, closed (R11). It returns the arguments with their clamps applied,
// re-decoded into doc, or cur when nothing was clamped; and the compiled
// schema, nil when the call has none.
func (e *Engine) closedSchema(c *Call, s *Server, t *Tool, doc *args.Doc, cur []byte) ([]byte, *schema.Schema, error) {
	if s.SchemaOff || c.Schema == nil {
		return cur, nil, nil
	}
	opts := &e.schemaOpts
	if t != nil {
		if err := t.compiled(); err != nil {
			return nil, nil, refusal(RuleShape, "%v", err)
		}
		opts = t.schemaOpts
	}
	sch, err := e.compiledSchema(c, t, opts)
	if err != nil {
		return nil, nil, refusal(RuleSchema, "the tool's input schema cannot be checked, so no call to it is allowed: %v", err)
	}
	out, _, err := sch.CheckValue(doc.Root())
	if err != nil {
		return nil, nil, refusal(RuleSchema, "arguments do not fit the tool's closed input schema: %v", err)
	}
	if out == nil {
		return cur, sch, nil
	}
	if err := doc.Decode(out, &e.limits); err != nil {
		return nil, nil, refusal(RuleSchema, "the clamped arguments: %v", err)
	}
	return out, sch, nil
}

// schemaMemo is the compiled schema a tool's last call used, and for which
// engine and pin.
type schemaMemo struct {
	e   *Engine
	key [32]byte
	s   *schema.Schema
	err error
}

// compiledSchema returns the compiled schema of c's tool from the cache. A
// configured tool remembers the one its last call used: a tool's schema
// rarely changes, and then a call takes it without the cache's lock and
// hashing.
func (e *Engine) compiledSchema(c *Call, t *Tool, opts *schema.Options) (*schema.Schema, error) {
	if t != nil {
		if m := t.lastSchema.Load(); m != nil && m.e == e && m.key == c.SchemaKey {
			return m.s, m.err
		}
	}
	sch, err := e.schemas.get(schemaKey{c.Server, c.Tool, c.SchemaKey}, c.Schema, opts)
	if t != nil {
		t.lastSchema.Store(&schemaMemo{e: e, key: c.SchemaKey, s: sch, err: err})
	}
	return sch, err
}
