package args

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestValidateStrict(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means valid
	}{
		{name: "object", in: `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
		{name: "surrounding whitespace", in: " \t\r\n{}\r\n"},
		{name: "array", in: `[1,2,{"a":[]}]`},
		{name: "numbers", in: `[0,-0,1.5,-1e10,2E+3,3e-2,123456789012345678901234567890]`},
		{name: "escapes", in: `{"a":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`},
		{name: "escaped key same as other key differs", in: `{"a\u0062":1,"ab2":2}`},
		{name: "utf8 raw", in: `{"k":"héllo 😀"}`},
		{name: "NUL escape in value", in: `{"k":"a\u0000b"}`},
		{name: "empty key", in: `{"":1}`},

		{name: "empty", in: ``, wantErr: "unexpected end"},
		{name: "only space", in: `   `, wantErr: "unexpected end"},
		{name: "trailing garbage", in: `{"a":1}x`, wantErr: "after the JSON value"},
		{name: "two values", in: `{"a":1} {"b":2}`, wantErr: "after the JSON value"},
		{name: "trailing comma object", in: `{"a":1,}`, wantErr: "want a string"},
		{name: "trailing comma array", in: `[1,]`, wantErr: "invalid character"},
		{name: "duplicate key", in: `{"method":"tools/list","method":"tools/call"}`, wantErr: `duplicate key "method"`},
		{name: "duplicate key nested", in: `{"params":{"arguments":{"path":"/a","path":"/b"}}}`, wantErr: `duplicate key "path"`},
		{name: "duplicate key via escape", in: `{"method":"a","m\u0065thod":"b"}`, wantErr: `duplicate key "method"`},
		{name: "duplicate key via escaped slash", in: `{"a/b":1,"a\/b":2}`, wantErr: `duplicate key "a/b"`},
		{name: "case variant keys", in: `{"method":"tools/list","Method":"tools/call"}`, wantErr: "differ only in case"},
		{name: "case variant keys nested", in: `{"x":[{"path":"/a","PATH":"/b"}]}`, wantErr: "differ only in case"},
		{name: "long s folds to s", in: `{"params":1,"paramſ":2}`, wantErr: "differ only in case"},
		{name: "kelvin folds to k", in: `{"k":1,"\u212a":2}`, wantErr: "differ only in case"},
		{name: "NUL in key", in: `{"method\u0000x":1}`, wantErr: "NUL"},
		{name: "invalid utf8", in: "{\"a\":\"\xff\"}", wantErr: "invalid UTF-8"},
		{name: "invalid utf8 in key", in: "{\"\xc3\x28\":1}", wantErr: "invalid UTF-8"},
		{name: "utf8 encoded surrogate", in: "{\"a\":\"\xed\xa0\x80\"}", wantErr: "invalid UTF-8"},
		{name: "overlong utf8", in: "{\"a\":\"\xc0\xaf\"}", wantErr: "invalid UTF-8"},
		{name: "lone high surrogate", in: `{"a":"\ud800"}`, wantErr: "surrogate"},
		{name: "lone high surrogate then text", in: `{"a":"\ud800x"}`, wantErr: "surrogate"},
		{name: "high then high", in: `{"a":"\ud800\ud800"}`, wantErr: "surrogate"},
		{name: "lone low surrogate", in: `{"a":"\udc00"}`, wantErr: "surrogate"},
		{name: "bad escape", in: `{"a":"\x"}`, wantErr: "invalid escape"},
		{name: "short unicode escape", in: `{"a":"\u12"}`, wantErr: "invalid \\u escape"},
		{name: "raw control char", in: "{\"a\":\"x\ny\"}", wantErr: "control character"},
		{name: "raw tab in string", in: "{\"a\":\"x\ty\"}", wantErr: "control character"},
		{name: "unterminated string", in: `{"a":"x`, wantErr: "unexpected end"},
		{name: "unterminated object", in: `{"a":1`, wantErr: "unexpected end"},
		{name: "leading zero", in: `[01]`, wantErr: "invalid character"},
		{name: "bare minus", in: `[-]`, wantErr: "invalid number"},
		{name: "dot no digits", in: `[1.]`, wantErr: "invalid number"},
		{name: "exp no digits", in: `[1e]`, wantErr: "invalid number"},
		{name: "plus sign", in: `[+1]`, wantErr: "invalid character"},
		{name: "NaN", in: `[NaN]`, wantErr: "invalid character"},
		{name: "single quotes", in: `{'a':1}`, wantErr: "want a string"},
		{name: "bad literal", in: `[tru]`, wantErr: "invalid literal"},
		{name: "BOM", in: "\ufeff{}", wantErr: "invalid character"},
		{name: "missing colon", in: `{"a" 1}`, wantErr: "want ':'"},
		{name: "comment", in: `{} // x`, wantErr: "after the JSON value"},
		{name: "too deep", in: strings.Repeat("[", 300) + strings.Repeat("]", 300), wantErr: "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate([]byte(tt.in), 256)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%q) = nil, want error containing %q", tt.in, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate(%q) = %q, want error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestValidateManyKeys(t *testing.T) {
	// Past the pairwise limit, duplicate detection switches to a map; both
	// exact and case-folded duplicates must still be found.
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"key` + strings.Repeat("x", i) + `":1`)
	}
	ok := b.String() + "}"
	if _, err := Validate([]byte(ok), 256); err != nil {
		t.Fatalf("100 distinct keys: %v", err)
	}
	for _, dup := range []string{`,"keyxxx":2}`, `,"KEYXXX":2}`, `,"\u212aeyxx":2}`} {
		if _, err := Validate([]byte(b.String()+dup), 256); err == nil {
			t.Errorf("100 keys then %s: no error", dup)
		}
	}
}

func TestValidateTopMembers(t *testing.T) {
	in := `{"jsonrpc":"2.0","i\u0064":7,"method":"tools\/call","params":{"a":1}}`
	_, top, err := ValidateTop([]byte(in), 256, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range top {
		got = append(got, string(m.Key)+"="+in[m.Start:m.End])
	}
	want := []string{`jsonrpc="2.0"`, `id=7`, `method="tools\/call"`, `params={"a":1}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("top members = %q, want %q", got, want)
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: `"tools/call"`, want: "tools/call"},
		{name: "escaped slash", in: `"tools\/call"`, want: "tools/call"},
		{name: "unicode", in: `"\u0074ools/call"`, want: "tools/call"},
		{name: "pair", in: `"\ud83d\ude00"`, want: "😀"},
		{name: "controls", in: `"a\n\t\"\\b"`, want: "a\n\t\"\\b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Unquote([]byte(tt.in))); got != tt.want {
				t.Fatalf("Unquote(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzValidate checks Validate against encoding/json: whatever Validate
// accepts, encoding/json must accept too (it is the laxer parser), and must
// decode to the same string values for the top-level keys.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`[{"a":1},{"b":"\ud83d\ude00"}]`, `{"a":"\ud800"}`, `{"a":1,"A":2}`, "{\"a\":\"\xff\"}",
		`{"a":[1,2,{"b":null}],"c":-1.5e3}`, `{"k":"\u212a","\u212a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, top, err := ValidateTop(data, 64, nil)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Validate accepted %q, encoding/json rejects it", data)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // Validate does not bound numbers; 1e700 is valid JSON
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("unmarshal of accepted %q: %v", data, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		if len(obj) != len(top) {
			t.Fatalf("%q: %d top members, encoding/json sees %d keys", data, len(top), len(obj))
		}
		for _, m := range top {
			if _, ok := obj[string(m.Key)]; !ok {
				t.Fatalf("%q: key %q not seen by encoding/json", data, m.Key)
			}
			if !json.Valid(data[m.Start:m.End]) {
				t.Fatalf("%q: member %q span %q is not a JSON value", data, m.Key, data[m.Start:m.End])
			}
		}
	})
}

// The validator was written with helpers of its own; it now shares Decode's. The
// references below are the validator's originals, and the tests hold the shared
// helpers to them, so that sharing changed nothing the validator accepts.

// plain8Ref reports whether all eight bytes packed in x are plain.
func plain8Ref(x uint64) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	control := (x - lsb*0x20) & ^x & msb
	q := x ^ (lsb * '"')
	quote := (q - lsb) & ^q & msb
	b := x ^ (lsb * '\\')
	backslash := (b - lsb) & ^b & msb
	return control|quote|backslash|x&msb == 0
}

// foldKeyRef maps every rune of k to the smallest rune of its simple
// case-folding orbit.
func foldKeyRef(k []byte) string {
	out := make([]byte, 0, len(k))
	for _, r := range string(k) {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		out = utf8.AppendRune(out, m)
	}
	return string(out)
}

func hex4Ref(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

func skipSpaceRef(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// TestSpecialAgreesWithPlain8 holds the word test Validate shares with Decode to the
// validator's own, exhaustively for two odd bytes at any two positions of a plain
// word, and on random words.
func TestSpecialAgreesWithPlain8(t *testing.T) {
	const filler = 0x6161616161616161 // "aaaaaaaa"
	for p := range 8 {
		for q := p + 1; q < 8; q++ {
			for c := range 256 {
				for e := range 256 {
					x := filler&^(0xff<<(8*p))&^(0xff<<(8*q)) | uint64(c)<<(8*p) | uint64(e)<<(8*q)
					if got, want := !special(x), plain8Ref(x); got != want {
						t.Fatalf("!special(%#016x) = %v, plain8 says %v", x, got, want)
					}
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1_000_000 {
		x := r.Uint64()
		if r.IntN(2) == 0 {
			x &= 0x7f7f7f7f7f7f7f7f
		}
		if got, want := !special(x), plain8Ref(x); got != want {
			t.Fatalf("!special(%#016x) = %v, plain8 says %v", x, got, want)
		}
	}
	for c := range 256 {
		var w [8]byte
		for k := range w {
			w[k] = 'a'
		}
		w[0] = byte(c)
		all := true
		for _, b := range w {
			all = all && plain[b]
		}
		if got := !special(binary.LittleEndian.Uint64(w[:])); got != all {
			t.Fatalf("!special(%q) = %v, the byte table says %v", w, got, all)
		}
	}
}

// TestHex4AgreesWithRef: every byte at every position of a \u escape's digits, and
// every short tail.
func TestHex4AgreesWithRef(t *testing.T) {
	for _, base := range []string{"0000", "aF9b", "FFFF", "d83d"} {
		for pos := range 4 {
			for c := range 256 {
				b := []byte(base)
				b[pos] = byte(c)
				for n := 0; n <= 4; n++ {
					want, ok := hex4Ref(b[:n])
					if !ok {
						want = -1
					}
					if got := hex4(string(b[:n]), 0); got != want {
						t.Fatalf("hex4(%q) = %d, want %d", b[:n], got, want)
					}
				}
			}
		}
	}
}

// FuzzSharedHelpers holds the key comparison, key folding and whitespace skipping
// Validate shares with Decode to the validator's originals, on any bytes.
func FuzzSharedHelpers(f *testing.F) {
	for _, p := range [][2]string{{"a", "A"}, {"k", "\u212a"}, {"s", "\u017f"}, {"Path", "pATH"}, {"x", "y"}, {"", ""}, {"ß", "SS"}, {"\xff", "\xfe"}, {"@", "`"}, {" \t\r\nx", "\n"}} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if got, want := sameKey(view(a), view(b)), bytes.EqualFold(a, b); got != want {
			t.Fatalf("sameKey(%q, %q) = %v, bytes.EqualFold says %v", a, b, got, want)
		}
		if got, want := foldKey(view(a)), foldKeyRef(a); got != want {
			t.Fatalf("foldKey(%q) = %q, want %q", a, got, want)
		}
		for i := 0; i <= len(a); i++ {
			if got, want := SkipSpace(a, i), skipSpaceRef(a, i); got != want {
				t.Fatalf("SkipSpace(%q, %d) = %d, want %d", a, i, got, want)
			}
		}
		want, ok := hex4Ref(a)
		if !ok {
			want = -1
		}
		if got := hex4(view(a), 0); got != want {
			t.Fatalf("hex4(%q) = %d, want %d", a, got, want)
		}
	})
}

// keyHoldsNUL reports whether some object key at or under v holds a NUL byte.
func keyHoldsNUL(v Value) bool {
	switch v.Kind() {
	case Object:
		for i := range v.Len() {
			k, m := v.Member(i)
			if strings.IndexByte(k, 0) >= 0 || keyHoldsNUL(m) {
				return true
			}
		}
	case Array:
		for i := range v.Len() {
			if keyHoldsNUL(v.Index(i)) {
				return true
			}
		}
	}
	return false
}

// FuzzValidateDecode holds the two strict readers to each other: on every input whose
// top-level value is an object, within the same limits (nesting capped alike, the
// other caps of Decode out of reach), Validate accepts exactly what Decode accepts,
// with one exception, which fails closed: an object key holding NUL, which only
// Validate refuses. Both refuse case-folded duplicate keys. Where both accept, the
// top-level members ValidateTop reports are Decode's, with the same source spans.
func FuzzValidateDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"a":1,"A":2}`, `{"k":1,"\u212a":2}`, `{"s":{"x":1,"\u017f":2}}`, `{"a\u0000":1}`, "{\"a\x00\":1}",
		`{"a":[[[[{"b":[]}]]]]}`, ` {"a":"\ud83d\ude00"} `, `{"a":"x"}}`, `{"a" :1 , "b":[1 ,2]}`,
	} {
		f.Add([]byte(s))
	}
	const depth = 8
	lim := &Limits{MaxBytes: 1 << 30, MaxDepth: depth, MaxElements: 1 << 30, MaxStringBytes: 1 << 30}
	f.Fuzz(func(t *testing.T, data []byte) {
		if i := SkipSpace(data, 0); i >= len(data) || data[i] != '{' {
			return // Decode takes objects only
		}
		var d Doc
		decErr := d.Decode(data, lim)
		_, top, valErr := ValidateTop(data, depth, nil)
		switch {
		case valErr != nil && decErr != nil:
			return
		case valErr != nil:
			if strings.Contains(valErr.(*SyntaxError).Msg, "contains NUL") && keyHoldsNUL(d.Root()) {
				return // the exception: only Validate refuses NUL in a key
			}
			t.Fatalf("Validate(%q) = %v, but Decode accepts it", data, valErr)
		case decErr != nil:
			t.Fatalf("Validate accepts %q, but Decode says %v", data, decErr)
		}
		root := d.Root()
		if len(top) != root.Len() {
			t.Fatalf("%q: ValidateTop reports %d members, Decode %d", data, len(top), root.Len())
		}
		for i, m := range top {
			k, v := root.Member(i)
			if string(m.Key) != k || string(data[m.Start:m.End]) != v.Raw() {
				t.Fatalf("%q: member %d is %q=%s for ValidateTop, %q=%s for Decode", data, i, m.Key, data[m.Start:m.End], k, v.Raw())
			}
		}
	})
}
