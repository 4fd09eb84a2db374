package dlp

import "bytes"

// jwt matches a JSON Web Token whose first '.' is at i. The header is the base64url run
// ending at i; it must start with "eyJ" (the encoding of `{"`) at the start of a word
// and decode to a JSON object with an "alg" member. A JWS has three parts; the signature
// may be empty only when the header says "none", so that "header.payload." at the end
// of a sentence is not taken for an unsecured JWT. A header with "enc" is a JWE and has
// five parts.
func (sc *scanner) jwt(i int) int {
	s := sc.s
	const tok = cB64URL
	// The header is ten bytes of tok or more before i: when one of the eight bytes
	// before i is not tok, it is shorter, and the walk back is spared (a file name's
	// extension is the common case).
	if i < 10 || !b64URLWord(load64(s, i-8)) {
		return i + 1
	}
	h := i
	for h > 0 && is(s[h-1], tok) {
		h--
	}
	if i-h < 10 || !has(s, h, "eyJ") {
		return i + 1
	}
	parts, unsigned, ok := jwtHeader(s[h:i])
	if !ok {
		return i + 1
	}
	end := i
	for p := 1; p < parts; p++ {
		if end >= len(s) || s[end] != '.' {
			return i + 1
		}
		next := run(s, end+1, tok)
		// The payload of a JWS is never empty; the signature is empty for "none", and
		// a JWE's key part is empty for direct encryption.
		if parts == 3 && (p == 1 && next-(end+1) < 2 || p == 2 && next == end+1 && !unsigned) {
			return i + 1
		}
		end = next
	}
	sc.add(JWT, h, end)
	return end
}

// jwtHeader decodes the start of a base64url header and reports how many parts its token
// has (3 for a JWS, 5 for a JWE) and whether it may be unsigned (it says "none"). A
// header is at most maxHeader bytes of JSON here; a longer one (with an embedded key) is
// judged by that prefix.
func jwtHeader(enc string) (parts int, unsigned, ok bool) {
	const maxHeader = 1536
	var buf [maxHeader]byte
	enc = enc[:min(len(enc), maxHeader/3*4)]
	n, ok := decodeB64URL(buf[:], enc)
	if !ok || n < 2 {
		return 0, false, false
	}
	h := buf[:n]
	if h[0] != '{' || !jsonMember(h, `"alg"`) {
		return 0, false, false
	}
	if jsonMember(h, `"enc"`) {
		return 5, false, true
	}
	return 3, bytes.Contains(h, []byte(`"none"`)), true
}

// jsonMember reports whether name (quoted) appears in h followed by optional
// whitespace and a colon.
func jsonMember(h []byte, name string) bool {
	for off := 0; ; {
		k := bytes.Index(h[off:], []byte(name))
		if k < 0 {
			return false
		}
		j := off + k + len(name)
		for j < len(h) && (h[j] == ' ' || h[j] == '\t' || h[j] == '\n' || h[j] == '\r') {
			j++
		}
		if j < len(h) && h[j] == ':' {
			return true
		}
		off = off + k + 1
	}
}

// decodeB64URL decodes unpadded base64url into dst, which must be large enough, and
// returns the decoded length. A length of 1 mod 4 is invalid.
func decodeB64URL(dst []byte, src string) (int, bool) {
	if len(src)%4 == 1 {
		src = src[:len(src)-1] // a truncated prefix of a longer header
	}
	n := 0
	var acc uint32
	bits := 0
	for k := 0; k < len(src); k++ {
		v := b64urlValue[src[k]]
		if v == 0xFF {
			return 0, false
		}
		acc = acc<<6 | uint32(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			if n >= len(dst) {
				return n, true
			}
			dst[n] = byte(acc >> bits)
			n++
		}
	}
	return n, true
}

var b64urlValue = func() (t [256]byte) {
	for k := range t {
		t[k] = 0xFF
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for k := 0; k < len(alphabet); k++ {
		t[alphabet[k]] = byte(k)
	}
	return t
}()

// b64URLWord reports whether every byte of the little-endian word x is a base64url
// character (cB64URL: letters, digits, '_' and '-'). For an ASCII byte b with t its low
// seven bits, each term's high bit is exact per byte, as in [anchorCandidates]: t|0x20
// is a lower-case letter just when b is a letter, and (t^c)+0x7F has its high bit
// clear just when b == c; no term carries into the next byte. Non-ASCII bytes fail.
func b64URLWord(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	t := x &^ hi
	l := t | lo*0x20
	digit := (lo*(0x7F+':') - t) & (t + lo*(0x7F-'/'))
	letter := (lo*(0x7F+'{') - l) & (l + lo*(0x7F-'`'))
	under := ^((t ^ lo*'_') + lo*0x7F)
	dash := ^((t ^ lo*'-') + lo*0x7F)
	return (digit|letter|under|dash)&^x&hi == hi
}
