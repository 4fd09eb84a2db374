package record

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time helpers for the decoder's two hot loops: hex digests
// (six per entry) and string bodies. Each looks at eight bytes per step and
// falls back to the byte loop when a word needs a closer look.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hex8 decodes 8 lower-case hex digits into 4 bytes of dst.
func hex8(dst []byte, src []byte) bool {
	v, bad := hexWord(binary.LittleEndian.Uint64(src))
	binary.LittleEndian.PutUint32(dst, uint32(v))
	return bad == 0
}

// hexWord decodes the 8 hex digits in x, the first in its low byte, into
// the low 4 bytes of v, the first digit in the high nibble of the low byte.
// bad is zero exactly when all 8 are lower-case hex digits.
//
// It computes each digit's value n from the low nibble (plus 9 when bit 6
// is set, as in 'a'-'f'), then spells n back: a byte is a lower-case hex
// digit exactly when n < 16 and the spelling is the byte. No step carries
// into the next byte: n is at most 24.
func hexWord(x uint64) (v, bad uint64) {
	n := x&(ones*0x0f) + (x>>6&ones)*9
	letter := (n + ones*(0x80-10)) >> 7 & ones // n >= 10
	back := n + ones*'0' + letter*('a'-'0'-10)
	bad = (n+ones*(0x80-16))&highs | (back ^ x)
	t := (n<<4 | n>>8) & 0x00ff00ff00ff00ff // pairs of digits to bytes
	t = (t | t>>8) & 0x0000ffff0000ffff
	return (t | t>>16) & 0xffffffff, bad
}

// hexDigest decodes the 64 lower-case hex digits of src into dst and
// reports whether they all are such digits; it is parseHex32 writing in
// place, with the loop unrolled.
func hexDigest(dst *Digest, src []byte) bool {
	src = src[:64]
	v0, b0 := hexWord(binary.LittleEndian.Uint64(src[0:]))
	v1, b1 := hexWord(binary.LittleEndian.Uint64(src[8:]))
	v2, b2 := hexWord(binary.LittleEndian.Uint64(src[16:]))
	v3, b3 := hexWord(binary.LittleEndian.Uint64(src[24:]))
	binary.LittleEndian.PutUint64(dst[0:], v0|v1<<32)
	binary.LittleEndian.PutUint64(dst[8:], v2|v3<<32)
	v0, c0 := hexWord(binary.LittleEndian.Uint64(src[32:]))
	v1, c1 := hexWord(binary.LittleEndian.Uint64(src[40:]))
	v2, c2 := hexWord(binary.LittleEndian.Uint64(src[48:]))
	v3, c3 := hexWord(binary.LittleEndian.Uint64(src[56:]))
	binary.LittleEndian.PutUint64(dst[16:], v0|v1<<32)
	binary.LittleEndian.PutUint64(dst[24:], v2|v3<<32)
	return b0|b1|b2|b3|c0|c1|c2|c3 == 0
}

// hexValid reports whether the 64 bytes of src are lower-case hex digits,
// as hexDigest does, without decoding them: a byte below 0x80 is one when
// it is at least '0' and not past '9', or at least 'a' and not past 'f'
// (each test the high bit of a sum, which cannot carry into the next
// byte).
func hexValid(src []byte) bool {
	src = src[:64]
	in, high := uint64(highs), uint64(0)
	for i := 0; i < 64; i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		digit := (x + ones*(0x80-'0')) &^ (x + ones*(0x80-'9'-1))
		letter := (x + ones*(0x80-'a')) &^ (x + ones*(0x80-'f'-1))
		in &= digit | letter
		high |= x
	}
	return (^in|high)&highs == 0
}

// allZeros reports whether the 64 bytes of src are all '0'.
func allZeros(src []byte) bool {
	src = src[:64]
	var diff uint64
	for i := 0; i < 64; i += 8 {
		diff |= binary.LittleEndian.Uint64(src[i:]) ^ ones*'0'
	}
	return diff == 0
}

// plainRun returns how many leading bytes of b are plain string bytes
// (printable ASCII other than '"' and '\\'), a word at a time.
func plainRun(b []byte) int {
	i := 0
	for ; len(b)-i >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// Flag a byte >= 0x80 or < 0x20, and a zero byte of x^'"' and of
		// x^'\\'. Borrows run only upwards, so the lowest flag is exact.
		q := x ^ (ones * '"')
		s := x ^ (ones * '\\')
		special := (x - ones*0x20 | x | (q-ones)&^q | (s-ones)&^s) & highs
		if special != 0 {
			return i + bits.TrailingZeros64(special)>>3
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// plainRunString is plainRun for a string. A string of 8 bytes or more
// ends with a word that overlaps the one before, not with a byte loop.
func plainRunString(s string) int {
	n := len(s)
	if n < 8 {
		i := 0
		for i < n && plain[s[i]] {
			i++
		}
		return i
	}
	for i := 0; ; i += 8 {
		if i > n-8 {
			i = n - 8 // the last word, overlapping: its bytes before i were plain
		}
		w := s[i : i+8] // one bounds check; the compiler makes one load of w
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		q := x ^ (ones * '"')
		b := x ^ (ones * '\\')
		if special := (x - ones*0x20 | x | (q-ones)&^q | (b-ones)&^b) & highs; special != 0 {
			return i + bits.TrailingZeros64(special)>>3
		}
		if i == n-8 {
			return n
		}
	}
}

// appendHex32 appends d as 64 lower-case hex digits, eight at a time: it is
// hex.AppendEncode without a table lookup per digit.
func appendHex32(dst []byte, d *Digest) []byte {
	var out [64]byte
	for i := range 8 {
		binary.LittleEndian.PutUint64(out[8*i:], hexDigitsOf(binary.LittleEndian.Uint32(d[4*i:])))
	}
	return append(dst, out[:]...)
}

// hexDigitsOf spells the 4 bytes of x (the first in its low byte) as 8
// lower-case hex digits, the first in the low byte of the result.
func hexDigitsOf(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff // byte i of x in byte 2i
	n := v>>4&0x000f000f000f000f | (v&0x000f000f000f000f)<<8
	letter := (n + ones*(0x80-10)) >> 7 & ones // n >= 10
	return n + ones*'0' + letter*('a'-'0'-10)
}
