package chain

import "encoding/binary"

// Word-at-a-time helpers for the decoder's two hot loops: hex digests
// (six per entry) and string bodies. Each looks at eight bytes per step and
// falls back to the byte loop when a word needs a closer look.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// geq sets the high bit of each byte of x that is >= n; bytes of x must be
// below 0x80 and n at least 1.
func geq(x uint64, n byte) uint64 { return (x + ones*uint64(0x80-n)) & highs }

// leq sets the high bit of each byte of x that is <= n; bytes of x must be
// below 0x80.
func leq(x uint64, n byte) uint64 { return ^(x + ones*uint64(0x7f-n)) & highs }

// hex8 decodes 8 lower-case hex digits into 4 bytes of dst.
func hex8(dst []byte, src []byte) bool {
	x := binary.LittleEndian.Uint64(src)
	if x&highs != 0 {
		return false
	}
	digit := geq(x, '0') & leq(x, '9')
	letter := geq(x, 'a') & leq(x, 'f')
	if digit|letter != highs {
		return false
	}
	// Each byte's value: its low nibble, plus 9 for a letter.
	nib := x&(ones*0x0f) + (letter>>7)*9
	// Pair the bytes: lane k of 16 bits gets byte 2k<<4 | byte 2k+1.
	t := (nib&0x000f000f000f000f)<<4 | (nib>>8)&0x000f000f000f000f
	t = (t | t>>8) & 0x0000ffff0000ffff
	t = (t | t>>16) & 0xffffffff
	binary.LittleEndian.PutUint32(dst, uint32(t))
	return true
}

// plainRun returns how many leading bytes of b are plain string bytes
// (printable ASCII other than '"' and '\'), a word at a time.
func plainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// Stop at a byte >= 0x80, < 0x20, '"' or '\'.
		special := x & highs
		special |= (x - ones*0x20) & ^x & highs
		q := x ^ (ones * '"')
		special |= (q - ones) & ^q & highs
		s := x ^ (ones * '\\')
		special |= (s - ones) & ^s & highs
		if special != 0 {
			break
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}
