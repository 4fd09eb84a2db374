package args

import (
	"errors"
	"fmt"
	"math"
)

// Limits caps decoding. A zero (or negative) field means its default. A document over any
// cap is an error wrapping [ErrLimit]: a denial, never a truncation.
type Limits struct {
	// MaxBytes caps the input length, whitespace included. Zero means 1 MiB. Inputs over
	// 2 GiB are refused whatever the cap, since offsets are held in 32 bits.
	MaxBytes int
	// MaxDepth caps the nesting of objects and arrays: the arguments object alone is
	// depth 1, {"a":[]} is depth 2. Zero means 64.
	MaxDepth int
	// MaxElements caps the number of values in the document: every object, array,
	// string, number, boolean and null, the top-level object included, object keys not.
	// Zero means 100,000.
	MaxElements int
	// MaxStringBytes caps the length of each string and each object key after
	// unescaping, in UTF-8 bytes. Zero means 256 KiB.
	MaxStringBytes int
}

// Defaults for the zero fields of [Limits].
const (
	DefaultMaxBytes       = 1 << 20
	DefaultMaxDepth       = 64
	DefaultMaxElements    = 100_000
	DefaultMaxStringBytes = 256 << 10
)

// ErrLimit is wrapped by every error [Doc.Decode] returns for a document over one of its
// [Limits]. Callers branch on it to tell an oversized call from a malformed one; both deny.
var ErrLimit = errors.New("argument limit exceeded")

// limits is Limits with the defaults applied.
type limits struct {
	maxBytes, maxDepth, maxElements, maxString int
}

func (l *Limits) resolve() limits {
	r := limits{DefaultMaxBytes, DefaultMaxDepth, DefaultMaxElements, DefaultMaxStringBytes}
	if l != nil {
		if l.MaxBytes > 0 {
			r.maxBytes = l.MaxBytes
		}
		if l.MaxDepth > 0 {
			r.maxDepth = l.MaxDepth
		}
		if l.MaxElements > 0 {
			r.maxElements = l.MaxElements
		}
		if l.MaxStringBytes > 0 {
			r.maxString = l.MaxStringBytes
		}
	}
	r.maxBytes = min(r.maxBytes, math.MaxInt32)
	return r
}

func limitError(off int, format string, a ...any) error {
	return fmt.Errorf("args: "+format+" at byte %d: %w", append(a, off, ErrLimit)...)
}

// SyntaxError reports where and why an input is not the strict JSON that [Doc.Decode]
// and [Validate] accept.
type SyntaxError struct {
	Offset int    // byte offset of the first offending byte, or the input length at a premature end
	Msg    string // what was wrong
}

// Error returns the message with its byte offset, such as
// "args: invalid JSON at byte 7: duplicate object key (first at byte 1)".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("args: invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

func syntaxError(off int, msg string) error {
	return &SyntaxError{Offset: off, Msg: msg}
}

// describe names the byte c for an error message without echoing more of the input.
func describe(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("byte %#02x", c)
}

// covers reports whether every document within o is within l too.
func (l limits) covers(o limits) bool {
	return l.maxBytes >= o.maxBytes && l.maxDepth >= o.maxDepth && l.maxElements >= o.maxElements && l.maxString >= o.maxString
}
