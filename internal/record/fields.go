package record

import (
	"encoding/binary"
	"strconv"
)

// Fields reads a line of the stored form that is not an entry, field by
// field, with the rules of the entry decoder: numbers in canonical decimal,
// digests in lower-case hex, literals byte for byte. A chain's checkpoint
// and ack lines are read with it. The first failure sticks: later reads do
// nothing, and [Fields.Err] reports it with the byte offset where it
// happened.
type Fields struct {
	d decoder
}

// NewFields returns a reader of line (without its newline).
func NewFields(line []byte) *Fields { return &Fields{d: decoder{b: line}} }

// Literal consumes the bytes of s.
func (f *Fields) Literal(s string) { f.d.litSlow(s) }

// Uint reads a canonical unsigned integer no larger than max.
func (f *Fields) Uint(max uint64) uint64 { return f.d.uint(max) }

// Digest reads 64 lower-case hex digits (no quotes).
func (f *Fields) Digest() Digest { return f.d.hex32() }

// Hex reads 2*len(dst) lower-case hex digits into dst, whose length is a
// multiple of 4.
func (f *Fields) Hex(dst []byte) { f.d.hexInto(dst) }

// Fail records what is wrong at the current offset, unless a failure is
// recorded already.
func (f *Fields) Fail(what string) { f.d.fail(what) }

// AtEnd reports whether the whole line has been read.
func (f *Fields) AtEnd() bool { return f.d.i == len(f.d.b) }

// Err returns the first failure, or nil.
func (f *Fields) Err() error {
	if f.d.err == nil {
		return nil
	}
	return f.d.err
}

// hexInto reads 2*len(dst) lower-case hex digits into dst, whose length
// is a multiple of 4.
func (d *decoder) hexInto(dst []byte) {
	if d.err != nil {
		return
	}
	n := 2 * len(dst)
	if len(d.b)-d.i < n {
		d.fail("want " + strconv.Itoa(n) + " hex digits")
		return
	}
	var bad uint64
	src := d.b[d.i : d.i+n]
	for i := 0; i+8 <= n; i += 8 {
		v, w := hexWord(binary.LittleEndian.Uint64(src[i:]))
		bad |= w
		binary.LittleEndian.PutUint32(dst[i/2:], uint32(v))
	}
	if bad != 0 {
		d.fail("want " + strconv.Itoa(n) + " lower-case hex digits")
		return
	}
	d.i += n
}

// AppendHex appends d as 64 lower-case hex digits.
func AppendHex(dst []byte, d *Digest) []byte { return appendHex32(dst, d) }

// ParseDigest decodes exactly 64 lower-case hex digits; ok reports whether
// b is that.
func ParseDigest(b []byte) (d Digest, ok bool) { return parseHex32(b) }
