package args

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var fuzzSeeds = []string{
	`{}`,
	`{"path":"/home/alice/projects/app/main.go","head":10}`,
	`{"a":[1,-0,1.5e+10,"x",true,false,null,{"b":[]}]}`,
	`{"s":"\"\\\/\b\f\n\r\t\u0041\ud83d\ude00\u0000"}`,
	`{"a":1,"\u0061":2}`,
	`{"a":"\ud800"}`,
	`{"a":"\udc00\ud800"}`,
	"{\"a\":\"\xff\"}",
	"{\"a\":\"\xed\xa0\x80\"}",
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":1e}`,
	`{"n":123456789012345678901234567890,"m":1e400,"u":1e-400}`,
	"\xef\xbb\xbf{}", `{}x`, `[]`, ``, ` `,
	`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
}

// FuzzDecode checks Decode against encoding/json as a reference: whatever Decode accepts,
// encoding/json accepts with the same tree; whatever encoding/json rejects, Decode rejects.
// Decode may reject more (duplicate keys, invalid UTF-8, lone surrogates, non-objects).
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Doc
		err := d.Decode(data, nil)
		valid := json.Valid(data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrLimit) {
				t.Fatalf("Decode(%q) = %v, neither a *SyntaxError nor ErrLimit", data, err)
			}
			if d.Root().Kind() != Invalid {
				t.Fatalf("Decode(%q) failed but Root() is valid", data)
			}
			return
		}
		if !valid {
			t.Fatalf("Decode(%q) accepted what encoding/json rejects", data)
		}
		if d.Root().Kind() != Object {
			t.Fatalf("Decode(%q) accepted a top-level %v", data, d.Root().Kind())
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("encoding/json Decode(%q): %v", data, err)
		}
		if diff := cmp.Diff(want, tree(d.Root())); diff != "" {
			t.Fatalf("Decode(%q) differs from encoding/json (-want +got):\n%s", data, diff)
		}
		if got := d.Root().Raw(); got != string(bytes.Trim(data, " \t\r\n")) {
			t.Fatalf("Root().Raw() = %q, want the input without surrounding whitespace", got)
		}
	})
}

// FuzzCanonical checks that the canonical encoding is a fixed point, is valid JSON, and
// means what the input means to encoding/json (numbers as float64).
func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Doc
		if d.Decode(data, nil) != nil {
			return
		}
		c1 := d.Root().AppendJSON(nil)
		if !json.Valid(c1) {
			t.Fatalf("canonical(%q) = %q is not valid JSON", data, c1)
		}
		var d2 Doc
		if err := d2.Decode(c1, nil); err != nil {
			t.Fatalf("canonical(%q) = %q does not decode: %v", data, c1, err)
		}
		if c2 := d2.Root().AppendJSON(nil); !bytes.Equal(c1, c2) {
			t.Fatalf("canonical is not a fixed point:\n input %q\n  once %q\n twice %q", data, c1, c2)
		}
		if strict, err := d.Root().AppendCanonical(nil); err == nil && !bytes.Equal(strict, c1) {
			t.Fatalf("AppendCanonical = %q, AppendJSON = %q", strict, c1)
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil {
			return // encoding/json cannot hold the number (overflow) in a float64
		}
		if err := json.Unmarshal(c1, &b); err != nil {
			t.Fatalf("encoding/json rejects canonical %q: %v", c1, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical(%q) = %q means something else:\n%v\n%v", data, c1, a, b)
		}
	})
}

// FuzzPointer checks that ParsePointer and String round-trip, and that every concrete
// location Select reports selects exactly that value again.
func FuzzPointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a", "/a~1b", "/a~0b", "/~2", "a", "/paths/*", "/*/x", "/a/0", "/a/01", "/a/-", "/*/*", "/~01", "/\xff"} {
		f.Add(s)
	}
	d := mustDecode(f, `{"a":[10,{"x":1},[2]],"a/b":1,"a~b":2,"":{"":3},"paths":["/x","/y"],"m":{"x":5,"y":{"x":6}},"0":{"1":7},"*":8}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		if got := p.String(); got != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, got)
		}
		p.Select(d.Root(), func(v Value, at Loc) {
			loc := at.String()
			q, err := ParsePointer(loc)
			if err != nil {
				t.Fatalf("Select(%q) reported location %q that does not parse: %v", s, loc, err)
			}
			if q.wild {
				return // a literal "*" key reads back as a wildcard (documented)
			}
			var n int
			q.Select(d.Root(), func(w Value, _ Loc) {
				n++
				if w != v {
					t.Fatalf("location %q from %q selects %s, want %s", loc, s, w.Raw(), v.Raw())
				}
			})
			if n != 1 {
				t.Fatalf("location %q from %q selects %d values, want 1", loc, s, n)
			}
		})
	})
}
