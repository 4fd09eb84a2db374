package gateway

import (
	"crypto/sha256"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// hashArgsRef is hashArgs as first written, streaming into a hash: the
// reference hashArgsIn, which hashes one buffer it reuses, is held to.
func hashArgsRef(doc *args.Doc, raw []byte) [32]byte {
	h := sha256.New()
	if root := doc.Root(); root.Kind() != args.Invalid {
		if canon, err := root.AppendCanonical(nil); err == nil {
			h.Write([]byte("aegis.args.jcs.v1\x00"))
			h.Write(canon)
			return [32]byte(h.Sum(nil))
		}
	}
	h.Write([]byte("aegis.args.raw.v1\x00"))
	h.Write(raw)
	return [32]byte(h.Sum(nil))
}

var hashArgsInputs = []string{
	`{}`,
	`{"path":"/home/u/projects/a"}`,
	`{"b":1,"a":[true,null,"x\u00e9\n"],"c":{"z":1.50e+3,"y":-0}}`,
	`{"n":123456789012345678901234567890}`, // no exact canonical form
	`{"n":1e400}`,
	`not json`,
	`{"a":1,"a":2}`,
	``,
	`{"big":"` + string(make([]byte, 70<<10)) + `"}`, // NULs: invalid, hashed raw
}

// TestHashArgsIn holds hashArgsIn to the reference on the same buffer
// reused across inputs of every kind, canonical, refused and raw.
func TestHashArgsIn(t *testing.T) {
	var buf []byte
	big := `{"big":"` + string(bytesOf('x', 70<<10)) + `"}` // a canonical form past maxCanonKept
	for round := range 2 {
		for _, in := range append(hashArgsInputs, big, `{"after":"big"}`) {
			var doc args.Doc
			doc.Decode([]byte(in), nil) // on failure doc holds nothing
			want := hashArgsRef(&doc, []byte(in))
			if got := hashArgsIn(&buf, &doc, []byte(in)); got != want {
				t.Errorf("round %d, %.40q: hashArgsIn = %x, want %x", round, in, got, want)
			}
			if got := hashArgs(&doc, []byte(in)); got != want {
				t.Errorf("round %d, %.40q: hashArgs = %x, want %x", round, in, got, want)
			}
			if cap(buf) > maxCanonKept {
				t.Errorf("round %d, %.40q: the buffer kept %d bytes", round, in, cap(buf))
			}
		}
	}
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

func FuzzHashArgsIn(f *testing.F) {
	for _, in := range hashArgsInputs[:8] {
		f.Add([]byte(in), []byte(`{"prev":[1,2,3]}`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var buf []byte
		for _, in := range [][]byte{b, a} { // b leaves the buffer dirty
			var doc args.Doc
			doc.Decode(in, nil)
			if got, want := hashArgsIn(&buf, &doc, in), hashArgsRef(&doc, in); got != want {
				t.Fatalf("%q: hashArgsIn = %x, want %x", in, got, want)
			}
		}
	})
}
