package args

import (
	"encoding/json"
	"errors"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// tree converts a decoded value into the shape encoding/json produces with UseNumber, so
// tests and the differential fuzz target can compare the two decoders.
func tree(v Value) any {
	switch v.Kind() {
	case Null:
		return nil
	case Bool:
		return v.Raw() == "true"
	case Number:
		return json.Number(v.Raw())
	case String:
		return v.Str()
	case Array:
		a := make([]any, v.Len())
		for i := range a {
			a[i] = tree(v.Index(i))
		}
		return a
	case Object:
		m := make(map[string]any, v.Len())
		for i := range v.Len() {
			k, e := v.Member(i)
			m[k] = tree(e)
		}
		return m
	}
	return "<invalid>"
}

func stdlibTree(t testing.TB, in string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(in))
	dec.UseNumber()
	var got any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("encoding/json rejects %q: %v", in, err)
	}
	return got
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty object", `{}`},
		{"typical call", `{"path":"/home/alice/projects/app/main.go","head":10}`},
		{"all four whitespace bytes", " \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n1 \t\r\n} \t\r\n"},
		{"nested", `{"a":{"b":[1,[2,{"c":null}],true,false,"x"]}}`},
		{"empty containers", `{"a":[],"b":{},"c":""}`},
		{"empty key", `{"":1}`},
		{"big integer kept raw", `{"n":123456789012345678901234567890123456789}`},
		{"number forms", `{"a":[0,-0,1.5,-1.5,1e5,1E5,1e+5,1e-5,-0.0e0,0.000001,10,2.50]}`},
		{"huge exponent kept raw", `{"n":1e99999999999999999999}`},
		{"simple escapes", `{"s":"\"\\\/\b\f\n\r\t"}`},
		{"unicode escapes", `{"s":"\u0041\u00e9\u20AC\uFFFD"}`},
		{"surrogate pair", `{"s":"\ud83d\ude00"}`},
		{"escaped NUL", `{"s":"a\u0000b"}`},
		{"escaped key", `{"\u0061b":1}`},
		{"literal multibyte", `{"s":"é€😀"}`},
		{"literal U+FFFD", "{\"s\":\"\xef\xbf\xbd\"}"},
		{"literal U+2028 in string", "{\"s\":\"\xe2\x80\xa8\"}"},
		{"literal DEL in string", "{\"s\":\"\x7f\"}"},
		{"long string needing no escapes", `{"s":"` + strings.Repeat("abcdefgh", 1000) + `"}`},
		{"many members without duplicates", manyMembers(100, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Doc
			if err := d.Decode([]byte(tt.in), nil); err != nil {
				t.Fatalf("Decode(%q) = %v, want success", tt.in, err)
			}
			if diff := cmp.Diff(stdlibTree(t, tt.in), tree(d.Root())); diff != "" {
				t.Errorf("tree mismatch with encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

func manyMembers(n int, dup bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k := i
		if dup && i == n-1 {
			k = n / 2
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", k%7))
		b.WriteString(strconv.Itoa(k))
		b.WriteString(`":`)
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteByte('}')
	return b.String()
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		offset int // byte offset the SyntaxError must name
	}{
		// Not a JSON object at all.
		{"empty input", ``, 0},
		{"only whitespace", "  \n", 3},
		{"top-level array", `[]`, 0},
		{"top-level string", `"a"`, 0},
		{"top-level number", `1`, 0},
		{"top-level null", `null`, 0},
		{"top-level after whitespace", ` true`, 1},
		{"leading BOM", "\xef\xbb\xbf{}", 0},

		// Trailing garbage and framing.
		{"trailing garbage", `{}x`, 2},
		{"two values", `{} {}`, 3},
		{"extra closer", `{}}`, 2},
		{"trailing NUL", "{}\x00", 2},
		{"unterminated object", `{"a":1`, 6},
		{"unterminated nested", `{"a":[1,2`, 9},
		{"mismatched closer", `{"a":[1}`, 7},
		{"mismatched closer object", `{"a":{]}`, 6},

		// Non-JSON syntax that lenient parsers accept.
		{"block comment", `{/*c*/}`, 1},
		{"line comment after", "{}//x", 2},
		{"comment inside", "{\"a\":1 // c\n}", 7},
		{"single-quoted key", `{'a':1}`, 1},
		{"single-quoted value", `{"a":'x'}`, 5},
		{"unquoted key", `{a:1}`, 1},
		{"numeric key", `{1:2}`, 1},
		{"trailing comma object", `{"a":1,}`, 7},
		{"trailing comma array", `{"a":[1,]}`, 8},
		{"leading comma", `{,"a":1}`, 1},
		{"missing comma", `{"a":1 "b":2}`, 7},
		{"missing colon", `{"a" 1}`, 5},
		{"double colon", `{"a"::1}`, 5},
		{"missing value", `{"a":}`, 5},
		{"array hole", `{"a":[1,,2]}`, 8},
		{"NaN", `{"a":NaN}`, 5},
		{"Infinity", `{"a":Infinity}`, 5},
		{"minus Infinity", `{"a":-Infinity}`, 6},
		{"truncated true", `{"a":tru}`, 5},
		{"capital True", `{"a":True}`, 5},
		{"nulll", `{"a":nulll}`, 9},
		{"undefined", `{"a":undefined}`, 5},

		// Numbers.
		{"leading zero", `{"a":01}`, 6},
		{"negative leading zero", `{"a":-01}`, 7},
		{"double zero", `{"a":00}`, 6},
		{"plus sign", `{"a":+1}`, 5},
		{"trailing dot", `{"a":1.}`, 7},
		{"leading dot", `{"a":.5}`, 5},
		{"minus dot", `{"a":-.5}`, 6},
		{"dot exponent", `{"a":1.e5}`, 7},
		{"bare exponent", `{"a":1e}`, 7},
		{"exponent sign only", `{"a":1e+}`, 8},
		{"bare minus", `{"a":-}`, 6},
		{"hex", `{"a":0x10}`, 6},
		{"number then letter", `{"a":1a}`, 6},
		{"double minus", `{"a":--1}`, 6},

		// Strings: control characters, escapes, UTF-8.
		{"raw NUL in string", "{\"a\":\"x\x00\"}", 7},
		{"raw newline in string", "{\"a\":\"x\ny\"}", 7},
		{"raw tab in string", "{\"a\":\"\t\"}", 6},
		{"raw 0x1f in key", "{\"\x1f\":1}", 2},
		{"unterminated string", `{"a":"abc`, 9},
		{"unterminated escape", `{"a":"abc\`, 9},
		{"bad escape letter", `{"a":"\x41"}`, 6},
		{"escaped single quote", `{"a":"\'"}`, 6},
		{"capital U escape", `{"a":"\U0041"}`, 6},
		{"short unicode escape", `{"a":"\u12"}`, 6},
		{"non-hex unicode escape", `{"a":"\u12G4"}`, 6},
		{"invalid byte 0xff", "{\"a\":\"\xff\"}", 6},
		{"invalid byte in key", "{\"\xfe\":1}", 2},
		{"truncated sequence", "{\"a\":\"\xc3\"}", 6},
		{"overlong slash", "{\"a\":\"\xc0\xaf\"}", 6},
		{"overlong NUL", "{\"a\":\"\xc0\x80\"}", 6},
		{"UTF-8 encoded surrogate", "{\"a\":\"\xed\xa0\x80\"}", 6},
		{"beyond U+10FFFF", "{\"a\":\"\xf4\x90\x80\x80\"}", 6},
		{"lone continuation byte", "{\"a\":\"x\x80\"}", 7},
		{"invalid UTF-8 after escape", "{\"a\":\"\\n\xff\"}", 8},
		{"invalid UTF-8 outside string", "{\"a\":1\xff}", 6},

		// UTF-16 surrogate escapes: fail closed where parsers differ.
		{"lone high surrogate at end", `{"a":"\ud800"}`, 6},
		{"lone low surrogate", `{"a":"\udc00"}`, 6},
		{"high then letter escape", `{"a":"\ud800\u0041"}`, 6},
		{"high then high", `{"a":"\ud800\ud800"}`, 6},
		{"low then high", `{"a":"\udc00\ud800"}`, 6},
		{"high then raw text", `{"a":"\ud800x"}`, 6},
		{"high then other escape", `{"a":"\ud800\n"}`, 6},
		{"high surrogate in key", `{"\udbff":1}`, 2},

		// Duplicate keys: servers disagree on which one wins.
		{"duplicate key", `{"a":1,"a":2}`, 7},
		{"duplicate via escape", `{"a":1,"\u0061":2}`, 7},
		{"duplicate both escaped", `{"\u00e9":1,"\u00E9":2}`, 12},
		{"duplicate escaped vs literal", `{"é":1,"\u00e9":2}`, 8},
		{"duplicate different types", `{"a":{},"a":[]}`, 8},
		{"duplicate nested", `{"x":{"b":1,"b":1}}`, 12},
		{"duplicate empty keys", `{"":1,"":2}`, 6},
		{"duplicate in large object", manyMembers(40, true), -1},

		// Whitespace outside the four JSON bytes.
		{"form feed", "{\f}", 1},
		{"vertical tab", "{\v}", 1},
		{"NBSP", "{\xc2\xa0}", 1},
		{"U+2028 between tokens", "{\xe2\x80\xa8}", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Doc
			err := d.Decode([]byte(tt.in), nil)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Decode(%q) = %v, want a *SyntaxError", tt.in, err)
			}
			if errors.Is(err, ErrLimit) {
				t.Errorf("Decode(%q) = %v, which wraps ErrLimit; want a plain syntax error", tt.in, err)
			}
			if tt.offset >= 0 && se.Offset != tt.offset {
				t.Errorf("Decode(%q) offset = %d (%v), want %d", tt.in, se.Offset, err, tt.offset)
			}
			if !strings.Contains(err.Error(), "byte "+strconv.Itoa(se.Offset)) {
				t.Errorf("error %q does not name byte offset %d", err, se.Offset)
			}
			if got := d.Root().Kind(); got != Invalid {
				t.Errorf("after a failed Decode, Root().Kind() = %v, want Invalid", got)
			}
		})
	}
}

// nest returns an object nested depth containers deep: {"a":[{"a":[...]}]}.
func nest(depth int) string {
	var b strings.Builder
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`{"a":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`1`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return b.String()
}

func TestDecodeLimits(t *testing.T) {
	typical := `{"path":"/home/alice/projects/app/main.go","head":10}`
	tests := []struct {
		name    string
		in      string
		lim     *Limits
		wantErr bool
	}{
		{"depth at default cap", nest(64), nil, false},
		{"depth over default cap", nest(65), nil, true},
		{"depth at custom cap", nest(3), &Limits{MaxDepth: 3}, false},
		{"depth over custom cap", nest(4), &Limits{MaxDepth: 3}, true},
		{"depth one", `{"a":1}`, &Limits{MaxDepth: 1}, false},
		{"depth two with cap one", `{"a":[]}`, &Limits{MaxDepth: 1}, true},
		{"empty array counts as depth", `{"a":{"b":[]}}`, &Limits{MaxDepth: 2}, true},
		{"a million open brackets", `{"a":` + strings.Repeat("[", 1<<20), &Limits{MaxBytes: 2 << 20}, true},
		{"a million open brackets unlimited depth", `{"a":` + strings.Repeat("[", 1<<20), &Limits{MaxBytes: 2 << 20, MaxDepth: 1 << 30}, true},

		// {"a":[1,2]} holds four values: the object, the array and two numbers.
		{"elements at cap", `{"a":[1,2]}`, &Limits{MaxElements: 4}, false},
		{"elements over cap", `{"a":[1,2]}`, &Limits{MaxElements: 3}, true},
		{"keys are not elements", `{"a":1,"b":2}`, &Limits{MaxElements: 3}, false},
		{"elements over default cap", `{"a":[` + strings.Repeat("0,", 100000) + `0]}`, nil, true},
		{"elements at default cap", `{"a":[` + strings.Repeat("0,", 99997) + `0]}`, nil, false},

		{"bytes at cap", typical, &Limits{MaxBytes: len(typical)}, false},
		{"bytes over cap", typical, &Limits{MaxBytes: len(typical) - 1}, true},
		{"bytes over default cap", `{"a":"` + strings.Repeat("x", 1<<20) + `"}`, nil, true},
		{"whitespace counts as bytes", typical + "  ", &Limits{MaxBytes: len(typical) + 1}, true},

		{"string at cap", `{"a":"abcd"}`, &Limits{MaxStringBytes: 4}, false},
		{"string over cap", `{"a":"abcde"}`, &Limits{MaxStringBytes: 4}, true},
		{"key over cap", `{"abcde":1}`, &Limits{MaxStringBytes: 4}, true},
		{"cap counts unescaped bytes", `{"a":"\u00e9\u00e9"}`, &Limits{MaxStringBytes: 4}, false},
		{"cap counts unescaped bytes over", `{"a":"\u00e9\u00e9x"}`, &Limits{MaxStringBytes: 4}, true},
		{"cap counts UTF-8 bytes", `{"a":"ééé"}`, &Limits{MaxStringBytes: 5}, true},
		{"string over default cap", `{"a":"` + strings.Repeat("x", 256<<10+1) + `"}`, nil, true},
		{"string at default cap", `{"a":"` + strings.Repeat("x", 256<<10) + `"}`, nil, false},
		{"negative limits mean defaults", `{"a":[1,2]}`, &Limits{MaxBytes: -1, MaxDepth: -1, MaxElements: -1, MaxStringBytes: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Doc
			err := d.Decode([]byte(tt.in), tt.lim)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Decode = %v, want success", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("Decode = %v, want an error wrapping ErrLimit", err)
			}
			if !strings.Contains(err.Error(), "byte ") {
				t.Errorf("error %q does not name a byte offset", err)
			}
			if got := d.Root().Kind(); got != Invalid {
				t.Errorf("after a failed Decode, Root().Kind() = %v, want Invalid", got)
			}
		})
	}
}

// TestDecodeReuse checks that a Doc decodes a second document cleanly and that handles into
// the first document go stale instead of reading the second one.
func TestDecodeReuse(t *testing.T) {
	var d Doc
	if err := d.Decode([]byte(`{"a":"\u00e9","b":[1,2,3]}`), nil); err != nil {
		t.Fatal(err)
	}
	old := d.Root()
	oldA, _ := old.Lookup("a")
	if got := oldA.Str(); got != "é" {
		t.Fatalf(`first doc "a" = %q, want "é"`, got)
	}
	s := oldA.Str()
	if err := d.Decode([]byte(`{"a":"\u00fc","c":{}}`), nil); err != nil {
		t.Fatal(err)
	}
	if s != "é" {
		t.Errorf("string from the first document changed to %q after reuse", s)
	}
	if got := old.Kind(); got != Invalid {
		t.Errorf("stale root handle Kind() = %v, want Invalid", got)
	}
	if got := oldA.Str(); got != "" {
		t.Errorf("stale handle Str() = %q, want empty", got)
	}
	if _, ok := old.Lookup("c"); ok {
		t.Error("stale handle Lookup found a member of the new document")
	}
	want := map[string]any{"a": "ü", "c": map[string]any{}}
	if diff := cmp.Diff(want, tree(d.Root())); diff != "" {
		t.Errorf("second document (-want +got):\n%s", diff)
	}
	if err := d.Decode([]byte(`{"a":`), nil); err == nil {
		t.Fatal("Decode of a truncated document succeeded")
	}
	if got := d.Root().Kind(); got != Invalid {
		t.Errorf("after a failed Decode, Root().Kind() = %v, want Invalid", got)
	}
}

// TestDecodeDoesNotAliasInput checks that values survive the caller reusing its buffer.
func TestDecodeDoesNotAliasInput(t *testing.T) {
	buf := []byte(`{"path":"/home/alice/x"}`)
	var d Doc
	if err := d.Decode(buf, nil); err != nil {
		t.Fatal(err)
	}
	p, _ := d.Root().Lookup("path")
	for i := range buf {
		buf[i] = 'X'
	}
	if got := p.Str(); got != "/home/alice/x" {
		t.Errorf("Str() = %q after the input buffer was overwritten, want the original", got)
	}
}

func TestZeroDoc(t *testing.T) {
	var d Doc
	if got := d.Root().Kind(); got != Invalid {
		t.Errorf("zero Doc Root().Kind() = %v, want Invalid", got)
	}
}

// TestSpecial checks the word-at-a-time test against the byte table: exhaustively for
// one odd byte in each position, and on random words.
func TestSpecial(t *testing.T) {
	first := func(x uint64) int { // the first special byte, or 8
		for k := 0; k < 8; k++ {
			c := byte(x >> (8 * k))
			if c >= utf8.RuneSelf || !plain[c] {
				return k
			}
		}
		return 8
	}
	naive := func(x uint64) bool {
		// The lowest flag of specialBytes marks the first special byte: plainRun
		// relies on it.
		if got, want := bits.TrailingZeros64(specialBytes(x))>>3, first(x); got != want {
			t.Fatalf("specialBytes(%#016x) flags byte %d first, want %d", x, got, want)
		}
		return first(x) < 8
	}
	const filler = 0x6161616161616161 // "aaaaaaaa"
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			x := filler&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)
			if got, want := special(x), naive(x); got != want {
				t.Errorf("special(%#016x) = %v, want %v", x, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		x := r.Uint64()
		if r.IntN(2) == 0 {
			x &= 0x7f7f7f7f7f7f7f7f // mostly ASCII, so the plain case is exercised
		}
		if got, want := special(x), naive(x); got != want {
			t.Fatalf("special(%#016x) = %v, want %v", x, got, want)
		}
	}
}

// TestDecodeCaseFoldDuplicates: keys that a case-insensitive server (Go's
// encoding/json) reads as one member are refused like duplicates, in small
// objects and in large ones (which are checked by sorting).
func TestDecodeCaseFoldDuplicates(t *testing.T) {
	many := func(extra string) string {
		s := `{`
		for i := range 40 {
			s += `"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`
		}
		return s + extra + `}`
	}
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"plain", `{"path":"/a","Path":"/b"}`, false},
		{"upper", `{"path":"/a","PATH":"/b"}`, false},
		{"long s", `{"s":1,"\u017f":2}`, false},
		{"kelvin", `{"k":1,"\u212a":2}`, false},
		{"large object", many(`"Kaa":2`), false},
		{"large object, distinct", many(`"zz":2`), true},
		// Sorted by a fold that kept lower-case ASCII keys as they are, "A" and
		// "a" were not neighbours here, and the pair got through.
		{"large object, pair sorted apart", `{"A":0,"B":0,` + many(`"a":1`)[1:], false},
		{"large object, pair sorted apart, upper last", `{"a":0,"B":0,` + many(`"A":1`)[1:], false},
		{"distinct keys", `{"path":"/a","paths":["/b"]}`, true},
		{"same key in different objects", `{"a":{"x":1},"A2":{"X":1}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Doc
			err := d.Decode([]byte(tt.in), nil)
			if (err == nil) != tt.ok {
				t.Fatalf("Decode(%s) = %v, want ok %v", tt.in, err, tt.ok)
			}
		})
	}
}

// FuzzFoldKey holds foldKey, by which large objects are sorted for the duplicate check,
// to sameKey: two keys fold alike exactly when they name the same member.
func FuzzFoldKey(f *testing.F) {
	for _, p := range [][2]string{{"a", "A"}, {"k", "\u212a"}, {"s", "\u017f"}, {"Path", "pATH"}, {"x", "y"}, {"", ""}, {"ß", "SS"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // keys are valid UTF-8
		}
		if got, want := foldKey(a) == foldKey(b), sameKey(a, b); got != want {
			t.Fatalf("foldKey(%q) = %q, foldKey(%q) = %q; sameKey says %v", a, foldKey(a), b, foldKey(b), want)
		}
	})
}

// TestDecodeBorrowed: a borrowed document reads its input in place until Own copies
// it; Own keeps every Value valid, and after it the input may change; a Builder's
// append over a borrowed document owns its own text.
func TestDecodeBorrowed(t *testing.T) {
	in := []byte(`{"path":"/a/b","n":[1,{"k":"\u00e9"}]}`)
	var d Doc
	if err := d.DecodeBorrowed(in, nil); err != nil {
		t.Fatal(err)
	}
	p, _ := d.Root().Lookup("path")
	if p.Str() != "/a/b" {
		t.Fatalf("path %q", p.Str())
	}
	in[10] = 'X' // the borrowed text is the input itself
	if p.Str() != "/X/b" {
		t.Fatalf("a borrowed document does not read its input: %q", p.Str())
	}
	d.Own()
	in[10] = 'Y'
	if p.Str() != "/X/b" {
		t.Fatalf("after Own the document still reads its input: %q", p.Str())
	}
	var ref Doc
	if err := ref.Decode([]byte(`{"path":"/X/b","n":[1,{"k":"\u00e9"}]}`), nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(snapshot(&ref), snapshot(&d), cmp.AllowUnexported(node{}), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("owned document differs from Decode (-want +got):\n%s", diff)
	}

	in2 := []byte(`{"a":1}`)
	if err := d.DecodeBorrowed(in2, nil); err != nil {
		t.Fatal(err)
	}
	var b Builder
	if !b.BeginAppend(&d, nil, nil) {
		t.Fatal("BeginAppend refused a borrowed document")
	}
	b.StringMember("s", "x")
	out, err := b.End()
	if err != nil {
		t.Fatal(err)
	}
	in2[5] = '2'
	if d.Root().Raw() != `{"a":1,"s":"x"}` || string(out) != `{"a":1,"s":"x"}` || d.borrowed {
		t.Fatalf("the appended document %s (borrowed %v) depends on its old input", d.Root().Raw(), d.borrowed)
	}
	if err := d.DecodeBorrowed([]byte(`{"a":`), nil); err == nil || d.borrowed || d.Root().Kind() != Invalid {
		t.Fatal("a failed DecodeBorrowed left a document or a borrow")
	}
}

// TestOwnIn: OwnIn copies a borrowed text into the buffer it is lent, and
// only a borrowed one.
func TestOwnIn(t *testing.T) {
	in := []byte(`{"path":"/a/b"}`)
	var d Doc
	if err := d.DecodeBorrowed(in, nil); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 4)
	d.OwnIn(&buf)
	in[10] = 'X'
	if p, _ := d.Root().Lookup("path"); p.Str() != "/a/b" || string(buf) != `{"path":"/a/b"}` {
		t.Fatalf("after OwnIn: path %q, buffer %s", p.Str(), buf)
	}
	before := string(buf)
	d.OwnIn(&buf) // owned already: nothing copied
	if string(buf) != before {
		t.Fatal("OwnIn copied an owned text again")
	}
	if err := d.Decode([]byte(`{"k":1}`), nil); err != nil {
		t.Fatal(err)
	}
	buf = buf[:0]
	d.OwnIn(&buf)
	if len(buf) != 0 {
		t.Fatal("OwnIn copied the text of a Decode, which owns its copy")
	}
}
