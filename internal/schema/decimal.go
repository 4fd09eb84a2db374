package schema

import (
	"math/big"
	"math/bits"
	"strconv"
)

// dec is a finite decimal m × 10^e, the exact value of a JSON number as the validator
// reads it (a big.Rat of its text), in a form the fast path compares without
// allocating. m has no trailing zeros; zero is {m: 0, e: 0, neg: false}.
type dec struct {
	m   uint64
	e   int64
	neg bool
}

// maxDecDigits is the most significant digits a dec holds: 10^19 - 1 fits a uint64.
// A shortest double form has at most 17, so every exact number fits.
const maxDecDigits = 19

// maxExp saturates exponents far beyond any double's.
const maxExp = 1 << 40

// parseDec reads a number in JSON syntax (which the decoder, or strconv, produced)
// exactly. It fails on a number of more than maxDecDigits significant digits, and
// reports how many it has.
func parseDec[T string | []byte](s T) (d dec, digits int, ok bool) {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		d.neg = true
		i++
	}
	var m uint64
	frac := int64(0)  // digits after the point
	zeros := int64(0) // zeros held back after the last non-zero digit
	point := false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			point = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if point {
			frac++
		}
		if c == '0' {
			if digits > 0 {
				zeros++
			}
			continue
		}
		for ; zeros > 0; zeros-- {
			if digits++; digits > maxDecDigits {
				return dec{}, digits, false
			}
			m *= 10
		}
		if digits++; digits > maxDecDigits {
			return dec{}, digits, false
		}
		m = m*10 + uint64(c-'0')
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		for ; i < len(s); i++ {
			if exp < maxExp {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	if m == 0 {
		return dec{}, 0, true
	}
	d.m = m
	d.e = exp - frac + zeros
	return d, digits, true
}

// numDigits returns the number of decimal digits of m > 0.
func numDigits(m uint64) int {
	n := 1
	for m >= 10 {
		m /= 10
		n++
	}
	return n
}

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// cmpDec compares a and b exactly: -1, 0 or +1.
func cmpDec(a, b dec) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	c := cmpMag(a, b)
	if sa < 0 {
		return -c
	}
	return c
}

func (d dec) sign() int {
	switch {
	case d.m == 0:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpMag compares |a| and |b|, both non-zero.
func cmpMag(a, b dec) int {
	na, nb := numDigits(a.m), numDigits(b.m)
	// |x| is in [10^(n+e-1), 10^(n+e)).
	if ea, eb := int64(na)+a.e, int64(nb)+b.e; ea != eb {
		if ea < eb {
			return -1
		}
		return 1
	}
	ma, mb := a.m, b.m
	if na < nb {
		ma *= pow10[nb-na]
	} else {
		mb *= pow10[na-nb]
	}
	switch {
	case ma < mb:
		return -1
	case ma > mb:
		return 1
	}
	return 0
}

// isInt reports whether d has no fraction: m has no trailing zeros, so only a
// non-negative exponent (or zero) leaves none.
func (d dec) isInt() bool { return d.m == 0 || d.e >= 0 }

// multipleOf reports whether d / q is an integer, q > 0, as big.Rat's Quo and IsInt
// would.
func (d dec) multipleOf(q dec) bool {
	if d.m == 0 {
		return true
	}
	k := d.e - q.e // d/q = (d.m / q.m) × 10^k
	if k < 0 {
		// q.m × 10^-k must divide d.m; d.m has no trailing zeros, so no power of
		// ten above 1 divides it, and q.m × 10^-k has trailing zeros.
		return false
	}
	if k > maxShift {
		return false // beyond any two exact doubles; left to the validator
	}
	// q.m must divide d.m × 10^k.
	r := d.m % q.m
	for ; k > 0 && r != 0; k-- {
		hi, lo := bits.Mul64(r, 10)
		r = bits.Rem64(hi, lo, q.m)
	}
	return r == 0
}

// maxShift bounds the powers of ten multipleOf steps through: exact doubles span
// about 10^-324 to 10^308.
const maxShift = 700

// exactDec returns the value of the number text raw if it has an exact IEEE 754 double
// value, as [canonicalNumber] decides: its decimal value equals that of the shortest
// form of the double nearest to it. It never allocates.
func exactDec(raw string) (dec, bool) {
	d, digits, ok := parseDec(raw)
	if !ok {
		return dec{}, false // more digits than any shortest form has
	}
	if d.m == 0 {
		return d, true // 0, -0, 0.0e5: all read as the double 0, written "0"
	}
	// A decimal of at most 15 significant digits in the normal range round-trips
	// through a double (DBL_DIG is 15), and the shortest form of that double is this
	// decimal: any other of at most 15 digits would round-trip too, to another
	// double.
	if mag := int64(digits) + d.e; digits <= 15 && mag > -290 && mag < 290 {
		return d, true
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || f == 0 {
		return dec{}, false // out of range, or underflow to zero
	}
	var buf [32]byte
	short, _, ok := parseDec(strconv.AppendFloat(buf[:0], f, 'e', -1, 64))
	if !ok || short != d {
		return dec{}, false
	}
	return d, true
}

// decOfRat converts a schema bound to a dec. It fails unless r is exactly the value of
// a dec, which holds for every bound the schema's decoding accepted (each has an
// exact double value).
func decOfRat(r *big.Rat) (dec, bool) {
	f, _ := r.Float64()
	text := strconv.FormatFloat(f, 'e', -1, 64)
	d, _, ok := parseDec(text)
	if !ok {
		return dec{}, false
	}
	back, ok := new(big.Rat).SetString(text)
	if !ok || back.Cmp(r) != 0 {
		return dec{}, false
	}
	return d, true
}
