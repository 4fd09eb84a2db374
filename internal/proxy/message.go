package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/gateway"
)

// kind is what a JSON-RPC message is.
type kind uint8

const (
	kindRequest      kind = iota + 1 // method and id
	kindNotification                 // method, no id
	kindResponse                     // result or error, and id
	kindBatch                        // a JSON array of messages
)

// class is what the relay does with a method.
type class uint8

const (
	classOther     class = iota // relayed unchanged
	classToolsCall              // gated
	classToolsList              // its response is checked
	classCancelled              // held behind the call it cancels
	classDecided                // a request of another method: gated like a call
)

// span is the byte range [0]..[1] of a value in a message; the zero span
// means absent (no value starts at offset 0 inside an object).
type span [2]int

func (s span) ok() bool { return s[1] > 0 }

func (s span) of(d []byte) []byte { return d[s[0]:s[1]] }

// A message is a validated JSON-RPC message: what it is and where its parts
// are. Its slices alias the bytes it was parsed from.
type message struct {
	kind   kind
	method []byte // unescaped
	class  class
	id     []byte // raw JSON of the id; nil when absent
	params span
	result span
	error  span
}

// envelopeKeys are the JSON-RPC members. A member whose key differs from one
// of them only in case is refused: a case-insensitive decoder in the peer
// would read it as that member.
var envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// memberPool holds the scratch slices parseMessage collects top-level
// members in; its message keeps spans, never the members themselves.
var memberPool = sync.Pool{New: func() any { s := make([]args.Member, 0, 8); return &s }}

// errInvalidJSON marks errors in the JSON itself, as opposed to a well-formed
// value that is not a valid message; the first is a JSON-RPC parse error.
var errInvalidJSON = errors.New("invalid JSON")

// syntaxError returns an error of [args.Validate] in the relay's words,
// which peers read in its error responses: "<what> at offset <n>".
func syntaxError(err error) error {
	var se *args.SyntaxError
	if errors.As(err, &se) {
		return jsonError{se}
	}
	return err
}

type jsonError struct{ err *args.SyntaxError }

func (e jsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.err.Msg, e.err.Offset) }

func (e jsonError) Unwrap() error { return e.err }

// parseMessage validates data strictly and says what message it is. When it
// fails, the returned message still carries the raw id if the top-level
// object had exactly one "id" member before the point of failure, so the
// caller can answer it.
func parseMessage(data []byte, maxDepth int) (message, error) {
	tp := memberPool.Get().(*[]args.Member)
	defer memberPool.Put(tp)
	first, top, err := args.ValidateTop(data, maxDepth, (*tp)[:0])
	*tp = top
	var m message
	// An id given twice, or under a case variant, is not one to answer.
	nid := 0
	for _, mb := range top {
		if bytes.EqualFold(mb.Key, []byte("id")) {
			nid++
			if string(mb.Key) == "id" {
				m.id = data[mb.Start:mb.End]
			}
		}
	}
	if nid != 1 {
		m.id = nil
	}
	if err != nil {
		return m, fmt.Errorf("%w: %w", errInvalidJSON, syntaxError(err))
	}
	if first == '[' {
		m.kind = kindBatch
		return m, nil
	}
	if first != '{' {
		return m, errors.New("message is not a JSON object or array")
	}
	return m, m.classify(data, top)
}

func (m *message) classify(data []byte, top []args.Member) error {
	var version, method span
	hasID := false
	for _, mb := range top {
		s := span{mb.Start, mb.End}
		switch string(mb.Key) {
		case "jsonrpc":
			version = s
		case "id":
			hasID = true
		case "method":
			method = s
		case "params":
			m.params = s
		case "result":
			m.result = s
		case "error":
			m.error = s
		default:
			for _, k := range envelopeKeys {
				if bytes.EqualFold(mb.Key, []byte(k)) {
					return fmt.Errorf("member %.64q is a case variant of %q", mb.Key, k)
				}
			}
		}
	}
	if !version.ok() || string(version.of(data)) != `"2.0"` {
		return errors.New(`"jsonrpc" must be "2.0"`)
	}
	if m.params.ok() && !isContainer(data, m.params) && string(m.params.of(data)) != "null" {
		return errors.New(`"params" must be an object or an array`)
	}
	switch {
	case method.ok():
		if m.result.ok() || m.error.ok() {
			return errors.New("message has both a method and a result or error")
		}
		if data[method[0]] != '"' {
			return errors.New(`"method" must be a string`)
		}
		m.method = args.Unquote(method.of(data))
		c, err := classOf(m.method)
		if err != nil {
			return err
		}
		m.class = c
		if !hasID {
			m.kind = kindNotification
			if m.class == classDecided {
				m.class = classOther // notifications are relayed
			}
			return nil
		}
		m.kind = kindRequest
		switch m.id[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return nil
		}
		return fmt.Errorf("request id %s is not a string or a number", m.id)
	case m.result.ok() && m.error.ok():
		return errors.New("response has both a result and an error")
	case m.result.ok() || m.error.ok():
		if !hasID {
			return errors.New("response has no id")
		}
		if string(m.id) == "null" && m.result.ok() {
			return errors.New("result has a null id")
		}
		if m.error.ok() && data[m.error[0]] != '{' {
			return errors.New(`"error" must be an object`)
		}
		m.kind = kindResponse
		return nil
	default:
		return errors.New("message is neither a request, a notification nor a response")
	}
}

func isContainer(d []byte, s span) bool { return d[s[0]] == '{' || d[s[0]] == '[' }

// classOf classifies a method name, compared after JSON unescaping. A name
// that is not one of the methods aegis looks into but resembles one ("Tools/Call",
// "tools.call", "tools/call\u200b") is an error: a lenient peer might route it
// there, and aegis would not have looked.
func classOf(method []byte) (class, error) {
	switch string(method) {
	case "tools/call":
		return classToolsCall, nil
	case "tools/list":
		return classToolsList, nil
	case "notifications/cancelled":
		return classCancelled, nil
	}
	if gateway.Relayed(string(method)) {
		return classOther, nil
	}
	for _, c := range method {
		if c < 0x20 || c == 0x7f {
			return 0, fmt.Errorf("method name %.64q contains a control character", method)
		}
	}
	letters := make([]byte, 0, len(method))
	for _, r := range string(method) {
		if unicode.IsLetter(r) {
			letters = utf8.AppendRune(letters, r)
		}
	}
	for _, watched := range [...]string{"toolscall", "toolslist"} {
		if bytes.EqualFold(letters, []byte(watched)) {
			return 0, fmt.Errorf("method name %.64q resembles %s/%s", method, watched[:5], watched[5:])
		}
	}
	return classDecided, nil
}

// maxIDBytes bounds a request id, as raw JSON.
const maxIDBytes = 256

// maxExactInt is the largest integer every JSON peer (including JavaScript's
// doubles) reads exactly.
const maxExactInt = 1<<53 - 1

// requestKey returns the key under which a client's request id is tracked. A
// string id is keyed by its unescaped value and an integer by its decimal
// digits, so the string "7" and the number 7 share a key: a peer that
// confused the two could otherwise match a response to the wrong request.
// Only canonical integers (no fraction, exponent, leading zero or -0) within
// ±(2^53-1) are accepted as numeric ids, so every peer reads the same number,
// and no id longer than maxIDBytes, so waiting requests cost little memory.
func requestKey(raw []byte) (string, error) {
	if len(raw) > maxIDBytes {
		return "", fmt.Errorf("request id is longer than %d bytes", maxIDBytes)
	}
	if len(raw) > 0 && raw[0] == '"' {
		return string(args.Unquote(raw)), nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	var canon [24]byte
	if err != nil || n > maxExactInt || n < -maxExactInt || string(strconv.AppendInt(canon[:0], n, 10)) != string(raw) {
		return "", fmt.Errorf("request id %.40s is not a string or an integer within ±(2^53-1)", raw)
	}
	return string(raw), nil
}

// responseKey returns the key of a response's id, matching requestKey's keys.
// It is lenient with numbers (a peer may echo 7 as 7.0); ok is false for ids
// that can match no request (null, fractions, huge numbers).
func responseKey(raw []byte) (key string, ok bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		return string(args.Unquote(raw)), true
	}
	if k, err := requestKey(raw); err == nil {
		return k, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// find returns the span of the member named key; the zero span if none.
func find(ms []args.Member, key string) span {
	for _, m := range ms {
		if string(m.Key) == key {
			return span{m.Start, m.End}
		}
	}
	return span{}
}

// caseVariant reports a member whose key differs from one of keys only in
// case.
func caseVariant(ms []args.Member, keys ...string) error {
	for _, m := range ms {
		for _, k := range keys {
			if string(m.Key) != k && bytes.EqualFold(m.Key, []byte(k)) {
				return fmt.Errorf("member %.64q is a case variant of %q", m.Key, k)
			}
		}
	}
	return nil
}
