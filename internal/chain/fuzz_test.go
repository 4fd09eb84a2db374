package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var decisions = [...]string{Allow, Deny, Ask}

// FuzzCanonical builds entries from fuzzed fields and checks the encoder
// three ways: its output is what a naive RFC 8785 implementation makes of
// it, encoding/json reads it back into an entry that re-encodes to the same
// bytes (age's FuzzMalleability), and so does the strict decoder.
func FuzzCanonical(f *testing.F) {
	f.Add(uint64(7), int64(1_700_000_000_123_456_789), "alice", "/home/alice/a\"b", "api.github.com", uint16(443), "git", "log\n", false, uint8(1), uint8(0), "dev,ops", []byte("x"))
	f.Add(uint64(1), int64(0), "", "", "", uint16(0), "", "", true, uint8(0), uint8(1), "", []byte{})
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
				{Kind: "fs.read", Path: path},
				{Kind: "net.connect", Scheme: "https", Host: host, Port: port, URL: "https://" + host + path},
				{Kind: "exec", Program: prog, Argv: []string{prog, arg}[:len(arg)%3%2+1], Shell: shell, Command: arg},
				{Kind: "id", IDKind: prog, ID: arg},
			},
		}
		if would%4 > 0 {
			e.Would = decisions[(would%4)-1]
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

		ref, err := refJCS(c)
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
		if _, err := decodeEntry(line, &got); err != nil || e.Seq == 0 {
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
	for _, lines := range draw(f, "G -> A B").segs {
		for _, l := range lines {
			f.Add([]byte(strings.TrimSuffix(l, "\n")))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got Entry
		facts, err := decodeEntry(line, &got)
		_, verr := decodeEntry(line, nil)
		if (err == nil) != (verr == nil) {
			t.Fatalf("building and validating disagree: %v vs %v", err, verr)
		}
		// Verify's light read agrees with the strict decoder on every
		// line the strict decoder accepts.
		if light, ok := entryFactsOf(line); err == nil && (!ok || light.seq != facts.seq || string(light.prevText) != facts.prev.String() || string(light.hashText) != facts.hash.String() || !bytes.Equal(light.body, facts.body)) {
			t.Fatalf("light read %+v, %v; strict %+v", light, ok, facts)
		}
		if err == nil {
			again, err := got.MarshalJSON()
			if err != nil || !bytes.Equal(again, line) {
				t.Fatalf("accepted a line that re-encodes differently:\n line %q\n back %q (%v)", line, again, err)
			}
			body := append(bytes.Clone(facts.body), '}')
			if ref, err := refJCS(body); err != nil || !bytes.Equal(ref, body) {
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
		if ck, err := decodeCheckpoint(line); err == nil {
			if back := appendCheckpoint(nil, &ck); !bytes.Equal(back[:len(back)-1], line) {
				t.Fatalf("accepted a checkpoint that re-encodes differently: %q", line)
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

// fuzzDir returns one directory per fuzz worker, in memory where possible.
func fuzzDir(f *testing.F) string {
	dir, err := os.MkdirTemp("/dev/shm", "chainfuzz")
	if err != nil {
		return f.TempDir()
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func chainSeeds(f *testing.F) {
	for _, spec := range []string{"G -> A -> B -> C", "G -> A B C", "G", "G -> A ack", "G -> A ack B C", "G -> A ack ck -> B ack"} {
		p := draw(f, spec)
		f.Add([]byte(strings.Join(p.segs[0], "")))
	}
}

func resetDir(t *testing.T, dir string, data []byte) {
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		os.Remove(filepath.Join(dir, de.Name()))
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzVerify runs corrupted segment files through Verify, Scan and Open's
// recovery: no panic, and the three agree. A segment Verify accepts must
// scan to the same entries, and Open must recover it to exactly its signed
// part, or its acked part (which it then signs), and continue it; or refuse
// an ack whose MAC the key did not make.
func FuzzVerify(f *testing.F) {
	chainSeeds(f)
	dir := fuzzDir(f)
	p := draw(f, "G")
	f.Fuzz(func(t *testing.T, data []byte) {
		resetDir(t, dir, data)
		rep, err := VerifyWith(dir, p.pub, &VerifyOptions{AllSignatures: len(data)%2 == 0})
		var be *BreakError
		if err != nil && !errors.As(err, &be) {
			t.Fatalf("Verify: %v is neither nil nor a BreakError", err)
		}
		var n uint64
		serr := Scan(dir, func(e *Entry) error { n++; return nil })
		if err != nil {
			return
		}
		// By default Verify vouches for a signed line by its signature, not
		// its form (SPEC.md): a signed line not in the stored form (one a
		// writer of an older format signed with the same key, as the test
		// key did) verifies, and the strict reader refuses it. Only a
		// signed line may differ so.
		if _, verr := VerifyWith(dir, p.pub, &VerifyOptions{Strict: true}); verr != nil {
			if !errors.As(verr, &be) || be.Kind != BreakMalformed || be.Seq > rep.Signed {
				t.Fatalf("Verify passed (%+v); strictly: %v", rep, verr)
			}
			return
		}
		if serr != nil || n != rep.Entries {
			t.Fatalf("Verify passed %d entries; Scan: %d, %v", rep.Entries, n, serr)
		}
		if err := os.WriteFile(filepath.Join(dir, PublicKeyFile), MarshalPublicKey(p.pub), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, PrivateKeyFile), mustPKCS8(t, p), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, &Options{Logger: quiet, wrap: noSync})
		if err != nil {
			if rep.Acked > 0 && strings.Contains(err.Error(), "was not made with this chain's key") {
				return
			}
			t.Fatalf("Verify passed (%+v) but Open refused: %v", rep, err)
		}
		l.Close()
		keep := rep.Signed
		if rep.Acked > 0 {
			keep = rep.Acked
		}
		after, err := Verify(dir, p.pub)
		if err != nil || after.Truncated() || after.Entries != keep {
			t.Fatalf("recovery from %+v left %+v, %v", rep, after, err)
		}
	})
}

// FuzzScan runs corrupted segment files through Scan: no panic, and every
// entry it passes on is recordable and in order.
func FuzzScan(f *testing.F) {
	chainSeeds(f)
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		resetDir(t, dir, data)
		var next uint64 = 1
		var scanned []Entry
		err := Scan(dir, func(e *Entry) error {
			if e.Seq != next {
				t.Fatalf("Scan passed seq %d, want %d", e.Seq, next)
			}
			next++
			if _, err := e.Canonical(); err != nil {
				t.Fatalf("Scan passed an unrecordable entry: %v", err)
			}
			scanned = append(scanned, *e)
			return nil
		})
		var be *BreakError
		if err != nil && !errors.As(err, &be) {
			t.Fatalf("Scan: %v is neither nil nor a BreakError", err)
		}
		// ScanMap passes on the same entries, each with its own result,
		// and stops with the same error.
		var mapped uint64
		merr := ScanMap(dir, func(e *Entry, seq *uint64) { *seq = e.Seq }, func(e *Entry, seq *uint64) error {
			if mapped++; *seq != e.Seq || e.Seq != mapped {
				t.Fatalf("ScanMap passed seq %d with the result for %d, want seq %d", e.Seq, *seq, mapped)
			}
			return nil
		})
		if mapped != next-1 || fmt.Sprint(merr) != fmt.Sprint(err) {
			t.Fatalf("Scan: %d entries, %v; ScanMap: %d entries, %v", next-1, err, mapped, merr)
		}
		// A light ScanMap passes on the same entries but for the fields
		// it leaves zero, and stops with the same error.
		var light []Entry
		lerr := ScanMapWith(dir, &ScanOptions{Light: true}, func(e *Entry, _ *struct{}) {}, func(e *Entry, _ *struct{}) error {
			light = append(light, *e)
			return nil
		})
		if fmt.Sprint(lerr) != fmt.Sprint(err) {
			t.Fatalf("Scan: %v; light ScanMap: %v", err, lerr)
		}
		if lw := lightened(scanned); !reflect.DeepEqual(lw, light) { // cmp.Diff only to tell how: it is slow for a fuzz target
			t.Fatalf("light ScanMap (-Scan, lightened +light):\n%s", cmp.Diff(lw, light))
		}
	})
}

// lightened returns ents with the fields ScanOptions.Light leaves zero
// set to zero.
func lightened(ents []Entry) []Entry {
	if ents == nil {
		return nil
	}
	out := make([]Entry, len(ents))
	for i, e := range ents {
		e.Session, e.Time = "", time.Time{}
		e.ArgsHash, e.Envelope, e.PolicyHash, e.ToolSchemaHash = Digest{}, Digest{}, Digest{}, Digest{}
		out[i] = e
	}
	return out
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
		refString(&ref, s)
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

// FuzzAck: decodeAck takes exactly the lines appendAck makes, and every
// line it takes is one appendAck makes back byte for byte.
func FuzzAck(f *testing.F) {
	_, priv := testKey(f, 0)
	a := newAcker(priv)
	for _, seq := range []uint64{1, 42, MaxSeq} {
		k := a.make(seq, digestOf(fmt.Sprint(seq)))
		line := appendAck(nil, &k)
		f.Add(line[:len(line)-1])
	}
	f.Add([]byte(`{"ack":0,"hash":"","mac":""}`))
	f.Add([]byte(`{"ack":01,"hash":"00","mac":"00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		k, err := decodeAck(line)
		if err != nil {
			return
		}
		if k.seq == 0 || k.seq > MaxSeq {
			t.Fatalf("decodeAck(%q) took seq %d", line, k.seq)
		}
		if back := appendAck(nil, &k); !bytes.Equal(back[:len(back)-1], line) {
			t.Fatalf("decodeAck(%q) = %+v, which encodes as %q", line, k, back)
		}
		if a.check(&k) != (a.make(k.seq, k.hash).mac == k.mac) {
			t.Fatal("check disagrees with make")
		}
	})
}
