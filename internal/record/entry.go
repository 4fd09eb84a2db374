package record

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
	"unicode/utf8"
)

// MethodToolsCall is the method of a tool call, which an [Entry] records
// as no method at all.
const MethodToolsCall = "tools/call"

// Version is the format version written in every entry's "v" field.
const Version = 1

// MaxSeq is the largest sequence number a chain can hold: the largest
// integer RFC 8785 (which serialises numbers as IEEE 754 doubles) represents
// exactly. At 200,000 entries a second it lasts 1,400 years.
const MaxSeq = 1<<53 - 1

// The decisions and modes an entry may record.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"

	Enforce = "enforce"
	Shadow  = "shadow"
)

// Entry is the record of one decision: the axes the decision was made on,
// not the raw arguments (those live in the envelope, a separate store).
//
// The json tags name the fields of the stored form; SPEC.md defines that form
// and [Entry.MarshalJSON] produces it. Fields a log assigns (V, Seq, Prev,
// Hash) are ignored on input to chain's Log.Append and to [Template.Encode].
type Entry struct {
	V    uint64    `json:"v"`    // format version, [Version]
	Seq  uint64    `json:"seq"`  // position in the chain, from 1
	Time time.Time `json:"time"` // when the decision was made; stored in UTC with nanoseconds

	Session   string   `json:"session"`
	Principal string   `json:"principal"`
	Roles     []string `json:"roles"`
	Origin    string   `json:"origin"` // interactive or unattended, as the session says

	// Taint says the session was tainted (unattended, or it read an
	// untrusted result) when the decision was made.
	Taint bool `json:"taint"`

	Server string `json:"server"`
	// Method is the MCP request decided when it is not a tools/call
	// (resources/read, prompts/get, sampling/createMessage, ...); "" for
	// a tools/call, whose stored form has no method key. Tool then holds
	// what the method names: the prompt, the resource's URI; "" if nothing.
	Method         string `json:"method,omitempty"`
	Tool           string `json:"tool"`
	ToolSchemaHash Digest `json:"tool_schema_hash"` // zero when unknown
	// Bound says the tool had a confirmed binding; Tier is the risk tier of
	// that binding (read-only, data-read, mutating; empty when unknown).
	// With the fields above they are everything a policy decides on, so
	// recheck can decide again from the chain alone.
	Bound bool   `json:"bound"`
	Tier  string `json:"tier"`

	// Caps are the capabilities derived from the arguments, in canonical
	// form: the resources the call names.
	Caps []Cap `json:"caps"`

	Decision string   `json:"decision"` // Allow, Deny or Ask
	Mode     string   `json:"mode"`     // Enforce or Shadow
	Would    string   `json:"would"`    // the decision with shadow rules enforced; empty when it equals Decision
	Rules    []string `json:"rules"`    // ids of the rules that decided
	Reason   string   `json:"reason"`

	PolicyHash Digest `json:"policy_hash"`
	// ArgsHash is SHA-256 of the RFC 8785 canonical arguments, computed by the
	// caller; an approval is bound to it.
	ArgsHash Digest `json:"args_hash"`
	// Envelope links to the envelope record of the call; zero when none.
	Envelope Digest `json:"envelope"`

	Prev Digest `json:"prev"` // Hash of the previous entry; zero for the first
	Hash Digest `json:"hash"` // SHA-256 of the canonical encoding, see SPEC.md
}

// Cap is a derived capability as the chain records it: a kind and the
// canonical fields of that kind. Zero fields are omitted from the encoding.
// Package record owns this format; it does not interpret kinds, but for
// the conversion to and from [capability.Capability] (caps.go).
type Cap struct {
	Kind string `json:"kind"` // fs.read, fs.write, net.connect, exec, id

	Path string `json:"path,omitempty"` // fs.*: absolute clean path
	// Subtree is set for an fs.* capability on Path and everything under
	// it (a move, a tree, a search). Entries written before it existed
	// lack the key, and encode as they always did.
	Subtree bool `json:"subtree,omitempty"`

	Scheme string `json:"scheme,omitempty"` // net.connect
	Host   string `json:"host,omitempty"`
	Port   uint16 `json:"port,omitempty"`
	URL    string `json:"url,omitempty"`

	Program string   `json:"program,omitempty"` // exec
	Argv    []string `json:"argv,omitempty"`
	Shell   bool     `json:"shell,omitempty"`
	Command string   `json:"command,omitempty"`

	IDKind string `json:"id_kind,omitempty"` // id
	ID     string `json:"id,omitempty"`
	// Unproven is set for an id the server did not return in the session
	// (provenance: flag). Entries written before it existed lack the key.
	Unproven bool `json:"unproven,omitempty"`
}

// Digest is a SHA-256 value. Its text form is 64 lower-case hex digits.
type Digest [32]byte

// String returns d as 64 lower-case hex digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is all zero, the value of an absent digest.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText returns d as 64 lower-case hex digits.
func (d Digest) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, d[:]), nil }

// UnmarshalText accepts 64 lower-case hex digits, or the empty string for
// the zero digest.
func (d *Digest) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Digest{}
		return nil
	}
	v, ok := parseHex32(b)
	if !ok {
		return fmt.Errorf("digest %q is not 64 lower-case hex digits", b)
	}
	*d = v
	return nil
}

// parseHex32 decodes exactly 64 lower-case hex digits, eight at a time
// (see hexWord in swar.go).
func parseHex32(b []byte) (d Digest, ok bool) {
	if len(b) != 64 {
		return d, false
	}
	var bad uint64
	for i := range 8 {
		v, w := hexWord(binary.LittleEndian.Uint64(b[8*i:]))
		bad |= w
		binary.LittleEndian.PutUint32(d[4*i:], uint32(v))
	}
	return d, bad == 0
}

// unhex maps a lower-case hex digit to its value and every other byte to 0xff.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// check reports why e cannot be recorded, ignoring the fields a log assigns.
// It is the writer's half of what the decoder enforces.
func (e *Entry) check() error {
	switch e.Decision {
	case Allow, Deny, Ask:
	default:
		return fmt.Errorf("decision %q: want allow, deny or ask", e.Decision)
	}
	switch e.Mode {
	case Enforce, Shadow:
	default:
		return fmt.Errorf("mode %q: want enforce or shadow", e.Mode)
	}
	switch e.Would {
	case "", Allow, Deny, Ask:
	default:
		return fmt.Errorf("would %q: want allow, deny, ask or empty", e.Would)
	}
	if e.Method == MethodToolsCall {
		return fmt.Errorf("method %q is written as \"\"", e.Method)
	}
	if y := e.Time.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %v: year outside 0000-9999", e.Time)
	}
	for _, f := range []struct{ name, s string }{
		{"session", e.Session}, {"principal", e.Principal}, {"origin", e.Origin},
		{"server", e.Server}, {"method", e.Method}, {"tool", e.Tool}, {"tier", e.Tier}, {"reason", e.Reason},
	} {
		if !utf8.ValidString(f.s) {
			return fmt.Errorf("%s %q: not valid UTF-8", f.name, f.s)
		}
	}
	for _, f := range []struct {
		name string
		ss   []string
	}{{"roles", e.Roles}, {"rules", e.Rules}} {
		for _, s := range f.ss {
			if !utf8.ValidString(s) {
				return fmt.Errorf("%s: %q is not valid UTF-8", f.name, s)
			}
		}
	}
	for i := range e.Caps {
		if err := e.Caps[i].check(); err != nil {
			return fmt.Errorf("caps[%d]: %w", i, err)
		}
	}
	return nil
}

func (c *Cap) check() error {
	if c.Kind == "" {
		return fmt.Errorf("empty kind")
	}
	for _, s := range [...]string{c.Kind, c.Path, c.Scheme, c.Host, c.URL, c.Program, c.Command, c.IDKind, c.ID} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s capability: %q is not valid UTF-8", c.Kind, s)
		}
	}
	for _, s := range c.Argv {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s capability: argv %q is not valid UTF-8", c.Kind, s)
		}
	}
	return nil
}
