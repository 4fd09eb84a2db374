package schema

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/args"
)

// number decodes text as the number of an arguments object.
func number(t testing.TB, text string) (args.Value, bool) {
	t.Helper()
	var d args.Doc
	if err := d.Decode([]byte(`{"n":`+text+`}`), nil); err != nil {
		return args.Value{}, false
	}
	v, _ := d.Root().Lookup("n")
	return v, v.Kind() == args.Number
}

// ratOfDec is the reference value of d.
func ratOfDec(d dec) *big.Rat {
	r := new(big.Rat).SetInt(new(big.Int).SetUint64(d.m))
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(d.e)), nil))
	if d.e >= 0 {
		r.Mul(r, p)
	} else {
		r.Quo(r, p)
	}
	if d.neg {
		r.Neg(r)
	}
	return r
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// checkNumbers holds exactDec to canonicalNumber (the validator's conversion) and
// the dec arithmetic to big.Rat (the validator's), for two numbers.
func checkNumbers(t *testing.T, a, b string) {
	va, ok1 := number(t, a)
	vb, ok2 := number(t, b)
	if !ok1 || !ok2 {
		return
	}
	type num struct {
		d   dec
		rat *big.Rat
	}
	var nums []num
	for _, v := range []args.Value{va, vb} {
		canon, err := canonicalNumber(v)
		d, ok := exactDec(v.Raw())
		if ok != (err == nil) {
			t.Fatalf("%s: exactDec says exact %v, canonicalNumber %v", v.Raw(), ok, err)
		}
		if !ok {
			return
		}
		r, _ := new(big.Rat).SetString(canon)
		if got := ratOfDec(d); got.Cmp(r) != 0 {
			t.Fatalf("%s: dec %+v is %s, want %s", v.Raw(), d, got.RatString(), r.RatString())
		}
		if d.isInt() != r.IsInt() {
			t.Fatalf("%s: isInt %v", v.Raw(), d.isInt())
		}
		if back, ok := decOfRat(r); !ok || back != d {
			t.Fatalf("%s: decOfRat %+v %v, want %+v", v.Raw(), back, ok, d)
		}
		nums = append(nums, num{d, r})
	}
	x, y := nums[0], nums[1]
	if got, want := cmpDec(x.d, y.d), x.rat.Cmp(y.rat); got != want {
		t.Fatalf("cmp(%s, %s) = %d, want %d", a, b, got, want)
	}
	if y.rat.Sign() > 0 {
		want := new(big.Rat).Quo(x.rat, y.rat).IsInt()
		if got := x.d.multipleOf(y.d); got != want {
			t.Fatalf("%s multipleOf %s = %v, want %v", a, b, got, want)
		}
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		a, b string
	}{
		{"0", "-0"}, {"0.0e5", "0"}, {"1", "1.0"}, {"1e2", "100"}, {"100e-2", "1"},
		{"0.3", "0.1"}, {"0.35", "0.1"}, {"-7e300", "0.1"}, {"1e-300", "0.1"}, {"49", "7"},
		{"0.00003", "1e-5"}, {"3e-6", "1e-5"}, {"9e200", "3e200"}, {"1e200", "3e200"},
		{"5e-324", "5e-324"}, {"1e-323", "5e-324"}, {"1.7976931348623157e308", "5e-324"},
		{"9007199254740992", "2"}, {"9007199254740993", "1"}, {"0.10000000000000001", "1"},
		{"1e400", "1"}, {"1e-400", "1"}, {"-1.5", "-1.6"}, {"0.30000000000000004", "0.3"},
		{"123456789012345678", "1"}, {"12345678901234567", "1"}, {"1234567890123456.7", "1"},
		{"1e21", "1e20"}, {"2.5e-308", "2.4999999999999993e-308"}, {"10", "100000000000000000000"},
		{"4.35", "0.05"}, {"1.1", "0.01"}, {"99999999999999999e-17", "1"}, {"9.999999999999999", "1e-15"},
		{"1E+3", "1e3"}, {"-0.0", "0.5"}, {"1" + strings.Repeat("0", 300), "1e300"},
		{"0." + strings.Repeat("0", 300) + "1", "1e-301"},
	}
	for _, tt := range tests {
		t.Run(tt.a+" "+tt.b, func(t *testing.T) {
			checkNumbers(t, tt.a, tt.b)
			checkNumbers(t, tt.b, tt.a)
		})
	}
}

func TestParseDec(t *testing.T) {
	tests := []struct {
		in     string
		want   dec
		digits int
		ok     bool
	}{
		{"0", dec{}, 0, true},
		{"-0.000", dec{}, 0, true},
		{"100", dec{m: 1, e: 2}, 1, true},
		{"1.50", dec{m: 15, e: -1}, 2, true},
		{"10.5", dec{m: 105, e: -1}, 3, true},
		{"-0.001e-3", dec{m: 1, e: -6, neg: true}, 1, true},
		{"1E+3", dec{m: 1, e: 3}, 1, true},
		{"1000000000000000000000", dec{m: 1, e: 21}, 1, true},
		{"1234567890123456789", dec{m: 1234567890123456789, e: 0}, 19, true},
		{"12345678901234567891", dec{}, 20, false},
		{"1e999999999999999999999", dec{m: 1, e: 9999999999999}, 1, true}, // saturated
	}
	for _, tt := range tests {
		d, digits, ok := parseDec(tt.in)
		if ok != tt.ok || (ok && (d != tt.want || digits != tt.digits)) {
			t.Errorf("parseDec(%s) = %+v %d %v, want %+v %d %v", tt.in, d, digits, ok, tt.want, tt.digits, tt.ok)
		}
	}
}

// TestExactDecShortcut checks the 15-digit shortcut of exactDec across magnitudes,
// against the full round trip.
func TestExactDecShortcut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		digits := 1 + r.IntN(17)
		var b strings.Builder
		b.WriteByte(byte('1' + r.IntN(9)))
		for range digits - 1 {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		text := b.String() + "e" + strconv.Itoa(r.IntN(660)-340)
		v, ok := number(t, text)
		if !ok {
			t.Fatalf("%s does not decode", text)
		}
		_, err := canonicalNumber(v)
		if _, ok := exactDec(text); ok != (err == nil) {
			t.Fatalf("%s: exactDec %v, canonicalNumber %v", text, ok, err)
		}
	}
}

func TestMultipleOfShift(t *testing.T) {
	// Beyond maxShift the answer is left to the validator (false), never a wrong
	// true.
	d := dec{m: 3, e: 2 * maxShift}
	if d.multipleOf(dec{m: 3}) {
		t.Error("multipleOf answered past maxShift")
	}
	if diff := cmp.Diff(true, dec{m: 3, e: maxShift}.multipleOf(dec{m: 3})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// FuzzDecimal holds the fast path's number handling to the validator's: exactness
// as canonicalNumber decides, and comparisons, integers and multiples as big.Rat
// computes them.
func FuzzDecimal(f *testing.F) {
	for _, s := range [][2]string{
		{"0.3", "0.1"}, {"1e2", "100"}, {"9007199254740993", "1"}, {"5e-324", "1e-323"},
		{"1.7976931348623157e308", "3e200"}, {"0.30000000000000004", "0.1"}, {"-1.5", "0.25"},
		{"1e400", "1"}, {"123456789012345678", "7"}, {"4.35", "0.05"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 400 || len(b) > 400 {
			return
		}
		checkNumbers(t, a, b)
	})
}
