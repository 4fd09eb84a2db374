package proxy

import (
	"github.com/aegis-mcp/aegis/internal/args"
)

// Kind is what a JSON-RPC message is, for a front end that routes
// messages to and from a relay (aegis serve's HTTP transport).
type Kind uint8

const (
	Request      = Kind(kindRequest)
	Notification = Kind(kindNotification)
	Response     = Kind(kindResponse)
	Batch        = Kind(kindBatch)
)

// Inspected is one message as a front end sees it: what it is and its
// parts, raw. Its slices alias the bytes it was read from.
type Inspected struct {
	Kind   Kind
	ID     []byte // raw JSON; nil when absent
	Method string
	Params []byte // raw JSON; nil when absent
}

// Inspect reads one message as strictly as the relay does (a message it
// accepts here, the relay accepts as the same message), with maxDepth the
// relay's nesting cap.
func Inspect(data []byte, maxDepth int) (Inspected, error) {
	m, err := parseMessage(data, maxDepth)
	if err != nil {
		return Inspected{ID: m.id}, err
	}
	in := Inspected{Kind: Kind(m.kind), ID: m.id, Method: string(m.method)}
	if m.params.ok() {
		in.Params = m.params.of(data)
	}
	return in, nil
}

// IDKey is the key of a request or response id, by which a front end
// matches a response to its request: a string and a number never share
// one, and a number matches however a peer writes it (7 and 7.0). ok is
// false for an id no request can have.
func IDKey(raw []byte) (key string, ok bool) {
	k, ok := responseKey(raw)
	if !ok {
		return "", false
	}
	if raw[0] == '"' {
		return "s" + k, true
	}
	return "n" + k, true
}

// Member returns the raw value of the member key of the JSON object obj,
// which Inspect (or the relay) validated; nil when absent or obj is not
// an object.
func Member(obj []byte, key string) []byte {
	if len(obj) == 0 || obj[0] != '{' {
		return nil
	}
	var buf [8]args.Member
	if s := find(args.Members(buf[:0], obj, 0), key); s.ok() {
		return s.of(obj)
	}
	return nil
}

// WithMember returns the JSON object obj (which Inspect or the relay
// validated) with the value of its member key replaced by value (raw
// JSON), the other members as they were, in their order; obj unchanged
// when it has no such member.
func WithMember(obj []byte, key string, value []byte) []byte {
	if len(obj) == 0 || obj[0] != '{' {
		return obj
	}
	var buf [8]args.Member
	s := find(args.Members(buf[:0], obj, 0), key)
	if !s.ok() {
		return obj
	}
	out := make([]byte, 0, len(obj)-(s[1]-s[0])+len(value))
	out = append(out, obj[:s[0]]...)
	out = append(out, value...)
	return append(out, obj[s[1]:]...)
}
