package dlp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fullScan is Scan without its shortcuts: the scanner's pass from the first byte, the
// pass without invisible characters, and tidy, whatever the length of s. It is the
// reference the shortcuts are held to.
func fullScan(s string) []Finding {
	sc := scanner{s: s}
	sc.run()
	ref := sc.dst
	if sc.invisible {
		ref = scanVisible(s, ref)
	}
	return tidy(ref, 0)
}

// naiveAnchorFrom is anchorFrom a byte at a time.
func naiveAnchorFrom(s string, i int) int {
	for i < len(s) && anchor[s[i]] == 0 {
		i++
	}
	return i
}

// TestMinFinding holds the bound minFinding tight: strings of that length hold
// findings, so the shortcut of Scan for shorter strings is not set higher than the
// matchers allow.
func TestMinFinding(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Finding
	}{
		{"query password", "?pwd=a", []Finding{{Kind: URLPassword, Start: 5, End: 6}}},
		{"pair after a semicolon", ";pwd=a", []Finding{{Kind: ConnPassword, Start: 5, End: 6}}},
		{"pair before a semicolon", "Pwd=a;", []Finding{{Kind: ConnPassword, Start: 4, End: 5}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.in) != minFinding {
				t.Fatalf("test setup: %q is not minFinding (%d) bytes long", tc.in, minFinding)
			}
			if diff := cmp.Diff(tc.want, fullScan(tc.in)); diff != "" {
				t.Errorf("the full pass over %q (-want +got):\n%s", tc.in, diff)
			}
			if diff := cmp.Diff(tc.want, Scan(tc.in, nil)); diff != "" {
				t.Errorf("Scan(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestShortStringsHoldNothing runs the full pass over every string shorter than
// minFinding made of the bytes that the shortest findings are spelt with, and over
// every such window of the corpus: none holds a finding.
func TestShortStringsHoldNothing(t *testing.T) {
	const alphabet = "pwdPW=:;?&@/a.-1\u200b"
	var buf [minFinding - 1]byte
	var gen func(n int)
	gen = func(n int) {
		if s := string(buf[:n]); len(fullScan(s)) != 0 {
			t.Fatalf("the full pass finds %v in %q, shorter than minFinding (%d)", fullScan(s), s, minFinding)
		}
		if n == len(buf) {
			return
		}
		for k := 0; k < len(alphabet); k++ {
			buf[n] = alphabet[k]
			gen(n + 1)
		}
	}
	gen(0)

	var texts []string
	for _, s := range loadPositives(t) {
		texts = append(texts, s.text)
	}
	for _, n := range loadNegatives(t) {
		texts = append(texts, n.text)
	}
	for _, text := range texts {
		for i := range text {
			for n := 1; n < minFinding && i+n <= len(text); n++ {
				if fs := fullScan(text[i : i+n]); len(fs) != 0 {
					t.Fatalf("the full pass finds %v in %q, shorter than minFinding (%d)", fs, text[i:i+n], minFinding)
				}
			}
		}
	}
}

// TestNumbersHoldNothing checks numberMayHold: the numbers it passes over hold no
// finding, and what a number's bytes cannot spell is left to the scanner.
func TestNumbersHoldNothing(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want bool
	}{
		{"small integer", "40", false},
		{"twelve digits", "411111111111", false},
		{"thirteen digits", "4111111111111", true},
		{"card number", "4111111111111111", true},
		{"negative decimal", "-1234.5678e-10", true},
		{"short exponent", "-1.5E+300", false},
		{"not a number", "pwd=a;", true},
		{"a letter a number has not", "1x", true},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := numberMayHold(tc.raw); got != tc.want {
				t.Errorf("numberMayHold(%q) = %v, want %v", tc.raw, got, tc.want)
			}
		})
	}
	// Every short string of a number's bytes, from an alphabet with the digits of
	// card prefixes, and the windows of a number's length below the bound of the
	// corpus's card numbers: the full pass finds nothing in any.
	const alphabet = "0134-.e"
	var buf [6]byte
	count := 0
	check := func(s string) {
		if !numberMayHold(s) {
			count++
			if fs := fullScan(s); len(fs) != 0 {
				t.Fatalf("numberMayHold(%q) is false, but the full pass finds %v", s, fs)
			}
		}
	}
	var gen func(n int)
	gen = func(n int) {
		check(string(buf[:n]))
		if n == len(buf) {
			return
		}
		for k := 0; k < len(alphabet); k++ {
			buf[n] = alphabet[k]
			gen(n + 1)
		}
	}
	gen(0)
	for _, s := range loadPositives(t) {
		for _, w := range s.want {
			if w.Kind != Card {
				continue
			}
			card := strings.NewReplacer(" ", "", "-", "").Replace(s.text[w.Start:w.End])
			for i := 0; i+minNumberFinding-1 <= len(card); i++ {
				check(card[i : i+minNumberFinding-1])
			}
		}
	}
	if count == 0 {
		t.Fatal("numberMayHold passed over no string")
	}
}

// FuzzNumberMayHold holds numberMayHold to the full pass: a text it passes over holds
// no finding.
func FuzzNumberMayHold(f *testing.F) {
	for _, s := range []string{"40", "4111111111111111", "-0.5e10", "1e-1-1-1-1", "12-34-56-78", "pwd=a;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !numberMayHold(s) {
			if fs := fullScan(s); len(fs) != 0 {
				t.Fatalf("numberMayHold(%q) is false, but the full pass finds %v", s, fs)
			}
		}
	})
}

// TestAnchorFrom holds the word-at-a-time anchorFrom to the byte loop: every byte value
// at every place of strings of every length up to three words, amid fillers that are
// and are not candidates, from every start.
func TestAnchorFrom(t *testing.T) {
	for _, filler := range []byte{'a', '/', 'B', ',', 0x80, 0xFF, '_'} {
		for n := 0; n <= 24; n++ {
			b := []byte(strings.Repeat(string(filler), n))
			for p := range n {
				for c := range 256 {
					b[p] = byte(c)
					s := string(b)
					for i := 0; i <= n+1; i++ {
						if got, want := anchorFrom(s, i), naiveAnchorFrom(s, i); got != want {
							t.Fatalf("anchorFrom(%q, %d) = %d, want %d", s, i, got, want)
						}
					}
				}
				b[p] = filler
			}
		}
	}
}

// FuzzAnchorFrom holds anchorFrom to the byte loop from every start of any string.
func FuzzAnchorFrom(f *testing.F) {
	for _, s := range []string{"", "/home/u/projects/app/internal/server/handler.go", "encoding", "utf-8", "a\u200bb", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i <= len(s)+1; i++ {
			if got, want := anchorFrom(s, i), naiveAnchorFrom(s, i); got != want {
				t.Fatalf("anchorFrom(%q, %d) = %d, want %d", s, i, got, want)
			}
		}
	})
}

// TestB64URLWord holds b64URLWord to the character table: every byte value at every
// place of a word of base64url characters, and words of two odd bytes.
func TestB64URLWord(t *testing.T) {
	word := func(b []byte) uint64 { return load64(string(b), 0) }
	for _, filler := range []byte{'a', 'Z', '0', '_', '-'} {
		b := []byte(strings.Repeat(string(filler), 8))
		for p := range 8 {
			for c := range 256 {
				b[p] = byte(c)
				if got, want := b64URLWord(word(b)), is(byte(c), cB64URL); got != want {
					t.Fatalf("b64URLWord(%q) = %v, want %v", b, got, want)
				}
				for q := range 8 {
					if q == p {
						continue
					}
					for _, d := range []byte{'@', '[', '`', '{', '/', ':', 0x80, 0xC1, 0xE1, '.', ' '} {
						b[q] = d
						if b64URLWord(word(b)) {
							t.Fatalf("b64URLWord(%q) = true", b)
						}
					}
					b[q] = filler
				}
			}
			b[p] = filler
		}
	}
}

// FuzzJWTPrefilter holds the shortcut of jwt to the walk it spares: where it returns
// early, the base64url run before the '.' is shorter than ten bytes, and the walk
// would have returned the same.
func FuzzJWTPrefilter(f *testing.F) {
	for _, s := range []string{"/home/u/app/handler.go", "eyJhbGciOiJub25lIn0.e30.", "abcdefgh.x", "a-b_c9Z0xy.z", "\xffabcdefgh.", "0123456789."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i < len(s); i++ {
			if s[i] != '.' || !(i < 10 || !b64URLWord(load64(s, i-8))) {
				continue
			}
			h := i
			for h > 0 && is(s[h-1], cB64URL) {
				h--
			}
			if i-h >= 10 {
				t.Fatalf("jwt skips the '.' at %d of %q, whose run of %d bytes may start a header", i, s, i-h)
			}
		}
	})
}
