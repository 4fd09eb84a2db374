package record

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aegis-mcp/aegis/internal/jcsref"
)

var decisions = [...]string{Allow, Deny, Ask}

// FuzzCanonical builds entries from fuzzed fields and checks the encoder
// three ways: its output is what a naive RFC 8785 implementation makes of
// it, encoding/json reads it back into an entry that re-encodes to the same
// bytes (age's FuzzMalleability), and so does the strict decoder.
func FuzzCanonical(f *testing.F) {
	f.Add(uint64(7), int64(1_700_000_000_123_456_789), "alice", "/home/alice/a\"b", "api.github.com", uint16(443), "git", "log\n", false, uint8(1), uint8(0), "dev,ops", []byte("x"))
	f.Add(uint64(1), int64(0), "", "", "", uint16(0), "", "", true, uint8(0), uint8(1), "", []byte{})
	f.Add(uint64(2), int64(5), "bob", "/home/bob", "example.com", uint16(80), "ls", "-l", false, uint8(9), uint8(0), "dev", []byte("z"))
	f.Add(uint64(MaxSeq), int64(-1), "\u2028\u2029\x7f\x00\x1f", "é/😀", "xn--bcher-kva.example", uint16(65535), "\\", "\"", true, uint8(2), uint8(3), ",,", []byte("y"))
	f.Fuzz(func(t *testing.T, seq uint64, nanos int64, principal, path, host string, port uint16, prog, arg string, shell bool, dec, would uint8, roles string, digest []byte) {
		e := &Entry{
			Seq:       seq,
			Time:      time.Unix(0, nanos),
			Session:   arg + principal,
			Principal: principal,
			Roles:     strings.Split(roles, ","),
			Origin:    "interactive",
			Taint:     shell,
			Server:    host,
			Tool:      prog,
			Bound:     dec&4 != 0,
			Tier:      roles,
			Decision:  decisions[dec%3],
			Mode:      []string{Enforce, Shadow}[would%2],
			Rules:     []string{path},
			Reason:    arg,
			Caps: []Cap{
				{Kind: "fs.read", Path: path, Subtree: !shell},
				{Kind: "net.connect", Scheme: "https", Host: host, Port: port, URL: "https://" + host + path},
				{Kind: "exec", Program: prog, Argv: []string{prog, arg}[:len(arg)%3%2+1], Shell: shell, Command: arg},
				{Kind: "id", IDKind: prog, ID: arg},
			},
		}
		if would%4 > 0 {
			e.Would = decisions[(would%4)-1]
		}
		if dec&8 != 0 {
			// The entry's optional key beside the capability's.
			e.Method = "prompts/get"
		}
		if len(digest) > 0 {
			e.ArgsHash = digestOf(string(digest))
			e.Envelope = digestOf(string(digest) + "e")
			e.Prev = digestOf(string(digest) + "p")
		}
		valid := true
		for _, s := range []string{principal, path, host, prog, arg, roles} {
			valid = valid && utf8.ValidString(s)
		}
		agree(t, e)
		c, err := e.Canonical()
		if !valid || e.Seq > MaxSeq || e.Time.UTC().Year() > 9999 || e.Time.UTC().Year() < 0 {
			if err == nil {
				t.Fatalf("Canonical accepted an unrecordable entry: %+v", e)
			}
			return
		}
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}

		ref, err := jcsref.Canonical(c)
		if err != nil {
			t.Fatalf("reference cannot read %s: %v", c, err)
		}
		if !bytes.Equal(ref, c) {
			t.Fatalf("not JCS:\n got %s\nref %s", c, ref)
		}

		var std Entry
		if err := json.Unmarshal(c, &std); err != nil {
			t.Fatalf("encoding/json cannot read %s: %v", c, err)
		}
		c2, err := std.Canonical()
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("encoding/json round trip:\n was %s\n now %s (%v)", c, c2, err)
		}

		e.Hash, _ = e.ComputeHash()
		line, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var got Entry
		if _, err := Decode(line, &got); err != nil || e.Seq == 0 {
			if e.Seq == 0 && err != nil {
				return // stored entries are numbered from 1
			}
			t.Fatalf("decoder: %s: %v", line, err)
		}
		c3, err := got.Canonical()
		if err != nil || !bytes.Equal(c, c3) {
			t.Fatalf("decoder round trip:\n was %s\n now %s (%v)", c, c3, err)
		}
	})
}

// FuzzDecode feeds arbitrary lines to the strict decoders: whatever they
// accept must re-encode to exactly the same bytes (one spelling per entry),
// must read the same under encoding/json, and must be JCS.
func FuzzDecode(f *testing.F) {
	e := sample()
	e.Hash, _ = e.ComputeHash()
	good, _ := e.MarshalJSON()
	f.Add(good)
	m, _ := minimal().MarshalJSON()
	f.Add(m)
	// Two entries linked as a Log writes them (chain's FuzzCheckpoint
	// reads the checkpoint lines between them).
	var prev Digest
	for seq := uint64(1); seq <= 2; seq++ {
		var t Template
		if err := t.Encode(sample()); err != nil {
			f.Fatal(err)
		}
		var line []byte
		line, prev = t.AppendLine(nil, prev, seq)
		f.Add(bytes.TrimSuffix(line, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got Entry
		facts, err := Decode(line, &got)
		_, verr := Decode(line, nil)
		if (err == nil) != (verr == nil) {
			t.Fatalf("building and validating disagree: %v vs %v", err, verr)
		}
		// Verify's light read agrees with the strict decoder on every
		// line the strict decoder accepts.
		if light, ok := Skim(line); err == nil && (!ok || light.Seq != facts.Seq || string(light.PrevText) != facts.Prev.String() || string(light.HashText) != facts.Hash.String() || !bytes.Equal(light.Body, facts.Body)) {
			t.Fatalf("light read %+v, %v; strict %+v", light, ok, facts)
		}
		if err == nil {
			again, err := got.MarshalJSON()
			if err != nil || !bytes.Equal(again, line) {
				t.Fatalf("accepted a line that re-encodes differently:\n line %q\n back %q (%v)", line, again, err)
			}
			body := append(bytes.Clone(facts.Body), '}')
			if ref, err := jcsref.Canonical(body); err != nil || !bytes.Equal(ref, body) {
				t.Fatalf("accepted a body that is not JCS: %s", body)
			}
			var std Entry
			if err := json.Unmarshal(line, &std); err != nil {
				t.Fatalf("encoding/json refuses an accepted line: %v", err)
			}
			if c1, c2 := mustCanon(t, &got), mustCanon(t, &std); !bytes.Equal(c1, c2) {
				t.Fatalf("encoding/json reads another entry:\n%s\n%s", c1, c2)
			}
		}
	})
}

func mustCanon(t *testing.T, e *Entry) []byte {
	c, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// FuzzEncodeString holds the encoder's word-at-a-time string writer to the
// rune-by-rune reference, and its UTF-8 verdict to utf8.ValidString.
func FuzzEncodeString(f *testing.F) {
	f.Add("")
	f.Add("abcdefgh\xff")
	f.Add("\"\\\x00\x1f\x7f\u2028\xef\xbf\xbd")
	f.Add("/home/alice/projects/aegis/internal/chain/file-1.go")
	f.Fuzz(func(t *testing.T, s string) {
		w := encoder{b: []byte("x")}
		w.str(s)
		if w.bad != !utf8.ValidString(s) {
			t.Fatalf("str(%q): bad = %v", s, w.bad)
		}
		if w.bad {
			return
		}
		var ref bytes.Buffer
		ref.WriteByte('x')
		jcsref.WriteString(&ref, s)
		if !bytes.Equal(w.b, ref.Bytes()) {
			t.Fatalf("str(%q) = %s, want %s", s, w.b, ref.Bytes())
		}
	})
}

// FuzzAppendTime holds appendTime's calendar arithmetic to time.Format.
func FuzzAppendTime(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(-62167219200), int64(0))           // 0000-01-01
	f.Add(int64(253402300799), int64(999_999_999)) // 9999-12-31T23:59:59
	f.Add(int64(951782400), int64(1))              // 2000-02-29
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		checkAppendTime(t, time.Unix(sec, nsec))
		// Most of int64 is far outside 0000-9999; fold sec into it too.
		checkAppendTime(t, time.Unix(sec%(10_001*366*86400)-62167219200, nsec))
	})
}
