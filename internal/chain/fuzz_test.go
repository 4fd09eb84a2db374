package chain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"
)

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
		serr := Scan(dir, func(e *record.Entry) error { n++; return nil })
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
		var scanned []record.Entry
		err := Scan(dir, func(e *record.Entry) error {
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
		merr := ScanMap(dir, func(e *record.Entry, seq *uint64) { *seq = e.Seq }, func(e *record.Entry, seq *uint64) error {
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
		var light []record.Entry
		lerr := ScanMapWith(dir, &ScanOptions{Light: true}, func(e *record.Entry, _ *struct{}) {}, func(e *record.Entry, _ *struct{}) error {
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
func lightened(ents []record.Entry) []record.Entry {
	if ents == nil {
		return nil
	}
	out := make([]record.Entry, len(ents))
	for i, e := range ents {
		e.Session, e.Time = "", time.Time{}
		e.ArgsHash, e.Envelope, e.PolicyHash, e.ToolSchemaHash = record.Digest{}, record.Digest{}, record.Digest{}, record.Digest{}
		out[i] = e
	}
	return out
}

// FuzzCheckpoint feeds arbitrary lines to decodeCheckpoint: whatever it
// accepts must re-encode to exactly the same bytes. (record's FuzzDecode
// does the same for entry lines.)
func FuzzCheckpoint(f *testing.F) {
	for _, lines := range draw(f, "G -> A B").segs {
		for _, l := range lines {
			f.Add([]byte(strings.TrimSuffix(l, "\n")))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if ck, err := decodeCheckpoint(line); err == nil {
			if back := appendCheckpoint(nil, &ck); !bytes.Equal(back[:len(back)-1], line) {
				t.Fatalf("accepted a checkpoint that re-encodes differently: %q", line)
			}
		}
	})
}

// FuzzAck: decodeAck takes exactly the lines appendAck makes, and every
// line it takes is one appendAck makes back byte for byte.
func FuzzAck(f *testing.F) {
	_, priv := testKey(f, 0)
	a := newAcker(priv)
	for _, seq := range []uint64{1, 42, record.MaxSeq} {
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
		if k.seq == 0 || k.seq > record.MaxSeq {
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

// FuzzLaneNames: the lane and entry names parse without panicking, and
// what parses names itself one way only: the name it is written back as.
func FuzzLaneNames(f *testing.F) {
	for _, s := range []string{"fs", "fs@2", "fs@64", "fs@02", "17", "17@2", "0@2", "a@b@c", "@", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if server, n, ok := ParseLaneName(s); ok && filepath.Base(LaneDir("/r", server, n)) != s {
			t.Fatalf("%q parses as lane %d of %q, written back as %q", s, n, server, LaneDir("/r", server, n))
		}
		if seq, n, ok := ParseEntryName(s); ok {
			back := (Lane{N: n}).EntryName(seq)
			if again, n2, ok2 := ParseEntryName(back); !ok2 || again != seq || n2 != n {
				t.Fatalf("%q parses as %d@%d, written back as %q, which parses as %d@%d (%v)", s, seq, n, back, again, n2, ok2)
			}
		}
	})
}
