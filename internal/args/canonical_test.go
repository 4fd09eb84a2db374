package args

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func canonical(t testing.TB, in string) string {
	t.Helper()
	return string(mustDecode(t, in).Root().AppendJSON(nil))
}

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			// RFC 8785 section 3.2.2 (the serialisation of primitives).
			name: "RFC 8785 primitives",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// RFC 8785 section 3.2.3 (sorting by UTF-16 code units): the emoji sorts
			// before U+FB33 although its code point is larger.
			name: "RFC 8785 property sorting",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			name: "nested objects sorted, arrays kept in order",
			in:   `{"b":[3,1,{"z":1,"a":2}],"a":{"d":null,"c":true}}`,
			want: `{"a":{"c":true,"d":null},"b":[3,1,{"a":2,"z":1}]}`,
		},
		{
			name: "prefix key sorts first",
			in:   `{"ab":1,"a":2,"":3}`,
			want: `{"":3,"a":2,"ab":1}`,
		},
		{
			name: "supplementary characters compare by both surrogates",
			in:   `{"\ud83d\ude01":1,"\ud83d\ude00":2,"\ud83c\udfff":3,"\uffff":4,"\ud7ff":5}`,
			want: "{\"\ud7ff\":5,\"\U0001f3ff\":3,\"\U0001f600\":2,\"\U0001f601\":1,\"\uffff\":4}",
		},
		{
			name: "large object sorted",
			in:   `{"k9":9,"k8":8,"k7":7,"k6":6,"k5":5,"k4":4,"k3":3,"k2":2,"k1":1,"k0":0,"j":0,"i":0,"h":0,"g":0,"f":0,"e":0,"d":0,"c":0,"b":0,"a":0}`,
			want: `{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0,"i":0,"j":0,"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`,
		},
		{
			name: "string escapes",
			in:   `{"s":"\u0000\u0001\u0008\u0009\u000a\u000b\u000c\u000d\u001f\u0020\u007f\u2028\u2029\u00e9\/<>&"}`,
			want: "{\"s\":\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f \x7f\u2028\u2029é/<>&\"}",
		},
		{
			name: "whitespace dropped",
			in:   " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { } } ",
			want: `{"a":[1,2],"b":{}}`,
		},
		{
			name: "numbers",
			in:   `{"n":[0,-0,-0.0,1,-1,10,1.0,1.50,100e-2,1e21,1e20,123e18,0.000001,0.0000001,1e-7,-5e-324,9007199254740993,12345678901234567890,1e400,-1e400,1e-400]}`,
			want: `{"n":[0,0,0,1,-1,10,1,1.5,1,1e+21,100000000000000000000,123000000000000000000,0.000001,1e-7,1e-7,-5e-324,9007199254740992,12345678901234567000,null,null,0]}`,
		},
		{
			name: "fast-path integers",
			in:   `{"n":[999999999999999,-999999999999999,1000000000000000,7]}`,
			want: `{"n":[999999999999999,-999999999999999,1000000000000000,7]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := canonical(t, tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AppendJSON (-want +got):\n%s", diff)
			}
			if again := canonical(t, got); again != got {
				t.Errorf("canonical form is not a fixed point:\n once: %s\ntwice: %s", got, again)
			}
		})
	}
}

func TestAppendJSONAppends(t *testing.T) {
	d := mustDecode(t, `{"b":1,"a":[true]}`)
	a, _ := d.Root().Lookup("a")
	got := a.AppendJSON([]byte("prefix:"))
	if want := "prefix:[true]"; string(got) != want {
		t.Errorf("AppendJSON = %q, want %q", got, want)
	}
	if got := (Value{}).AppendJSON([]byte("x")); string(got) != "x" {
		t.Errorf("zero Value AppendJSON = %q, want dst unchanged", got)
	}
	if _, err := (Value{}).AppendCanonical(nil); err == nil {
		t.Error("zero Value AppendCanonical succeeded, want an error")
	}
}

// TestFormatNumber checks the ECMAScript serialisation against RFC 8785 Appendix B.
func TestFormatNumber(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		if got := string(appendNumber(nil, f)); got != tt.want {
			t.Errorf("appendNumber(%#016x) = %q, want %q", tt.bits, got, tt.want)
		}
		// The JSON text of the expected form must decode to the same encoding.
		if got := canonical(t, `{"n":`+tt.want+`}`); got != `{"n":`+tt.want+`}` {
			t.Errorf("canonical(%s) = %s, want it unchanged", tt.want, got)
		}
	}
}

func TestAppendCanonical(t *testing.T) {
	tests := []struct {
		name    string
		num     string
		want    string
		wantErr bool
	}{
		{name: "small integer", num: "10", want: "10"},
		{name: "zero", num: "0", want: "0"},
		{name: "negative zero is zero", num: "-0", want: "0"},
		{name: "zero with exponent", num: "0e999999999999", want: "0"},
		{name: "trailing fraction zeros", num: "4.50", want: "4.5"},
		{name: "exponent form", num: "1E30", want: "1e+30"},
		{name: "one tenth rounds to itself", num: "0.1", want: "0.1"},
		{name: "spelled with an exponent", num: "100e-2", want: "1"},
		{name: "long zero padding", num: "1.000000000000000000000000000000", want: "1"},
		{name: "2^53", num: "9007199254740992", want: "9007199254740992"},
		{name: "smallest subnormal", num: "5e-324", want: "5e-324"},
		{name: "largest double", num: "1.7976931348623157e308", want: "1.7976931348623157e+308"},
		{name: "2^53 plus one", num: "9007199254740993", wantErr: true},
		{name: "twenty-digit id", num: "12345678901234567890", wantErr: true},
		{name: "more digits than a double holds", num: "0.10000000000000001", wantErr: true},
		{name: "RFC example rounds", num: "333333333.33333329", wantErr: true},
		{name: "overflow", num: "1e400", wantErr: true},
		{name: "negative overflow", num: "-1e400", wantErr: true},
		{name: "underflow", num: "1e-400", wantErr: true},
		{name: "below the smallest subnormal", num: "4e-324", wantErr: true},
		{name: "huge exponent", num: "1e99999999999999999999999", wantErr: true},
		{name: "huge negative exponent", num: "1e-99999999999999999999999", wantErr: true},
		{name: "many digits", num: "1" + strings.Repeat("0", 400), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustDecode(t, `{"a":[true,{"n":`+tt.num+`}]}`)
			got, err := d.Root().AppendCanonical(nil)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("AppendCanonical(%s) = %s, want an error", tt.num, got)
				}
				if !strings.Contains(err.Error(), "byte 16") {
					t.Errorf("error %q does not name the number's offset (byte 16)", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("AppendCanonical(%s): %v", tt.num, err)
			}
			want := `{"a":[true,{"n":` + tt.want + `}]}`
			if string(got) != want {
				t.Errorf("AppendCanonical = %s, want %s", got, want)
			}
			if lossy := d.Root().AppendJSON(nil); string(lossy) != want {
				t.Errorf("AppendJSON = %s, differs from AppendCanonical %s", lossy, want)
			}
		})
	}
}

func TestCompareUTF16(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "a", -1},
		{"a", "", 1},
		{"a", "b", -1},
		{"ab", "a", 1},
		{"\uffff", "\U00010000", 1},  // U+FFFF is 0xFFFF; U+10000 is 0xD800 0xDC00
		{"\ue000", "\U0010ffff", 1},  // U+E000 sorts after every surrogate pair
		{"\ud7ff", "\U00010000", -1}, // U+D7FF sorts before
		{"\U0001f600", "\U0001f601", -1},
		{"x\U0001f600", "x\uff00", -1},
		{"é", "e", 1},
	}
	for _, tt := range tests {
		if got := compareUTF16(tt.a, tt.b); got != tt.want {
			t.Errorf("compareUTF16(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
