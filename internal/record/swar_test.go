package record

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzSWAR checks the word-at-a-time helpers against the obvious loops.
func FuzzSWAR(f *testing.F) {
	f.Add([]byte("0123456789abcdef"))
	f.Add([]byte("0123456789ABCDEF"))
	f.Add([]byte("hello \"world\" \\ \x00\x7f\x80\xff/:@`{~"))
	f.Add([]byte("gggggggg////////::::::::````````"))
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 8 {
			var got [4]byte
			ok := hex8(got[:], b)
			want, err := hex.DecodeString(string(b[:8]))
			lower := bytes.Equal(bytes.ToLower(b[:8]), b[:8])
			if ok != (err == nil && lower) || (ok && !bytes.Equal(got[:], want)) {
				t.Fatalf("hex8(%q) = %x, %v; want %x, %v", b[:8], got, ok, want, err == nil && lower)
			}
		}
		want := 0
		for want < len(b) && b[want] >= 0x20 && b[want] < 0x80 && b[want] != '"' && b[want] != '\\' {
			want++
		}
		if got := plainRun(b); got != want {
			t.Fatalf("plainRun(%q) = %d, want %d", b, got, want)
		}
		if got := plainRunString(string(b)); got != want {
			t.Fatalf("plainRunString(%q) = %d, want %d", b, got, want)
		}
		if len(b) >= 64 {
			// hexDigest is encoding/hex restricted to lower case.
			var got Digest
			ok := hexDigest(&got, b[:64])
			want, err := hex.DecodeString(string(b[:64]))
			lower := bytes.Equal(bytes.ToLower(b[:64]), b[:64])
			if ok != (err == nil && lower) || (ok && !bytes.Equal(got[:], want)) {
				t.Fatalf("hexDigest(%q) = %x, %v; want %x, %v", b[:64], got, ok, want, err == nil && lower)
			}
			if v := hexValid(b[:64]); v != ok {
				t.Fatalf("hexValid(%q) = %v, hexDigest says %v", b[:64], v, ok)
			}
			if z := allZeros(b[:64]); z != (string(b[:64]) == strings.Repeat("0", 64)) {
				t.Fatalf("allZeros(%q) = %v", b[:64], z)
			}
		}
		var d Digest
		copy(d[:], b)
		if got, want := appendHex32([]byte("x"), &d), hex.AppendEncode([]byte("x"), d[:]); !bytes.Equal(got, want) {
			t.Fatalf("appendHex32(%x) = %s, want %s", d, got, want)
		}
	})
}

// TestHexDigestEveryPosition puts every byte value in every position of
// a valid digest: hexDigest accepts exactly the lower-case hex digits, and
// decodes as encoding/hex does.
func TestHexDigestEveryPosition(t *testing.T) {
	valid := []byte("00112233445566778899aabbccddeeff0123456789abcdef00ff10ef7a8b9c0d")
	for pos := range 64 {
		for c := range 256 {
			b := bytes.Clone(valid)
			b[pos] = byte(c)
			var got Digest
			ok := hexDigest(&got, b)
			want, err := hex.DecodeString(string(b))
			isLowerHex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
			if ok != isLowerHex || err == nil != (isLowerHex || c >= 'A' && c <= 'F') || ok && !bytes.Equal(got[:], want) {
				t.Fatalf("hexDigest(%q) = %x, %v; want %x, %v", b, got, ok, want, isLowerHex)
			}
			if hexValid(b) != isLowerHex {
				t.Fatalf("hexValid(%q) = %v, want %v", b, !isLowerHex, isLowerHex)
			}
		}
	}
}

func TestHex8Exhaustive(t *testing.T) {
	// Every byte value in every position, the rest valid.
	for pos := range 8 {
		for c := range 256 {
			b := []byte("a0f9e1d2")
			b[pos] = byte(c)
			var got [4]byte
			ok := hex8(got[:], b)
			want, err := hex.DecodeString(string(b))
			valid := err == nil && (c < 'A' || c > 'F')
			if ok != valid || (ok && !bytes.Equal(got[:], want)) {
				t.Fatalf("hex8(%q) = %x, %v", b, got, ok)
			}
		}
	}
}

func TestAppendHex32Exhaustive(t *testing.T) {
	// Every byte value in every position of a word, the rest zero.
	for pos := range 32 {
		for c := range 256 {
			var d Digest
			d[pos] = byte(c)
			if got, want := appendHex32(nil, &d), hex.AppendEncode(nil, d[:]); !bytes.Equal(got, want) {
				t.Fatalf("appendHex32(%x) = %s, want %s", d, got, want)
			}
		}
	}
}
