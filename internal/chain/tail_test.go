package chain

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

func TestTailSigned(t *testing.T) {
	// lastSeg returns the path of dir's last segment.
	lastSeg := func(t *testing.T, dir string) string {
		segs, err := listSegments(dir)
		if err != nil || len(segs) == 0 {
			t.Fatalf("segments: %v, %v", segs, err)
		}
		return segs[len(segs)-1].path
	}
	// closed returns a chain of n entries, closed: signed.
	closed := func(t *testing.T, n int, opts *Options) string {
		dir := t.TempDir()
		logChain(t, dir, opts, n)
		return dir
	}
	// dropLastLine removes the last line of dir's last segment (its
	// checkpoint, leaving the ack before it at the end).
	dropLastLine := func(t *testing.T, dir string) {
		p := lastSeg(t, dir)
		b, _ := os.ReadFile(p)
		i := strings.LastIndexByte(string(b[:len(b)-1]), '\n')
		os.WriteFile(p, b[:i+1], 0o600)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
		want  bool
	}{
		{"closed", func(t *testing.T) string { return closed(t, 5, nil) }, true},
		{"no segments", func(t *testing.T) string { return t.TempDir() }, true},
		{"opened, nothing appended, closed", func(t *testing.T) string { return closed(t, 0, nil) }, true},
		{"many segments, closed", func(t *testing.T) string { return closed(t, 60, &Options{SegmentSize: 8 << 10}) }, true},
		{"ends with an ack", func(t *testing.T) string {
			d := closed(t, 5, &Options{MaxBatch: 2})
			dropLastLine(t, d)
			b, _ := os.ReadFile(lastSeg(t, d))
			if !strings.Contains(string(b[strings.LastIndexByte(string(b[:len(b)-1]), '\n')+1:]), `{"ack":`) {
				t.Fatal("the chain does not end with an ack line once its checkpoint is removed")
			}
			return d
		}, false},
		{"torn line", func(t *testing.T) string {
			d := closed(t, 5, nil)
			f, _ := os.OpenFile(lastSeg(t, d), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"args_hash":"ab`)
			f.Close()
			return d
		}, false},
		{"a checkpoint's text inside a torn tail", func(t *testing.T) string {
			d := closed(t, 5, nil)
			f, _ := os.OpenFile(lastSeg(t, d), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"checkpoint":9`)
			f.Close()
			return d
		}, false},
		{"an empty last segment after a signed one", func(t *testing.T) string {
			d := closed(t, 5, nil)
			os.WriteFile(filepath.Join(d, segmentName(6)), nil, 0o600)
			return d
		}, true},
		{"an empty last segment after an acked one", func(t *testing.T) string {
			d := closed(t, 5, &Options{MaxBatch: 2})
			dropLastLine(t, d)
			os.WriteFile(filepath.Join(d, segmentName(6)), nil, 0o600)
			return d
		}, false},
		{"a last line longer than the window", func(t *testing.T) string {
			d := closed(t, 5, nil)
			f, _ := os.OpenFile(lastSeg(t, d), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"checkpoint":` + strings.Repeat("x", 9000) + "\n")
			f.Close()
			return d
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			got, err := TailSigned(dir)
			if err != nil || got != tc.want {
				t.Fatalf("TailSigned = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := TailSigned(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("TailSigned of a missing directory: no error")
	}
}

// appendByHand appends to dir's last segment an entry after its last one,
// linked and hashed as a Log would, with no key: what anybody with write
// access to the file can do.
func appendByHand(t *testing.T, dir string) uint64 {
	t.Helper()
	var last record.Entry
	if err := Scan(dir, func(e *record.Entry) error { last = *e; return nil }); err != nil {
		t.Fatal(err)
	}
	e := *entryN(99)
	e.V, e.Seq, e.Prev, e.Time = record.Version, last.Seq+1, last.Hash, last.Time
	e.Reason = "appended by hand"
	h, err := e.ComputeHash()
	if err != nil {
		t.Fatal(err)
	}
	e.Hash = h
	line, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	segs, _ := listSegments(dir)
	f, err := os.OpenFile(segs[len(segs)-1].path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	return e.Seq
}

// TestLastSignature: the last checkpoint a chain's key signed says how far
// the key vouches; an entry appended by hand after it (which Scan reads
// as well formed) lies beyond; a forged or foreign signature vouches for
// nothing.
func TestLastSignature(t *testing.T) {
	pubOf := func(t *testing.T, dir string) ed25519.PublicKey {
		b, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		pub, err := ParsePublicKey(b)
		if err != nil {
			t.Fatal(err)
		}
		return pub
	}
	lastHash := func(t *testing.T, dir string, seq uint64) (h record.Digest) {
		Scan(dir, func(e *record.Entry) error {
			if e.Seq == seq {
				h = e.Hash
			}
			return nil
		})
		return h
	}
	t.Run("closed", func(t *testing.T) {
		dir := t.TempDir()
		logChain(t, dir, &Options{SegmentSize: 8 << 10}, 40)
		seq, h, ok, err := LastSignature(dir, pubOf(t, dir))
		if err != nil || !ok || seq != 40 || h != lastHash(t, dir, 40) {
			t.Fatalf("LastSignature = %d, %x, %v, %v; want 40, its hash, true", seq, h, ok, err)
		}
	})
	t.Run("appended by hand", func(t *testing.T) {
		dir := t.TempDir()
		logChain(t, dir, nil, 5)
		if got := appendByHand(t, dir); got != 6 {
			t.Fatalf("appended seq %d", got)
		}
		n := 0
		if err := Scan(dir, func(*record.Entry) error { n++; return nil }); err != nil || n != 6 {
			t.Fatalf("Scan read %d entries, %v: the hand-appended one must look well formed", n, err)
		}
		seq, _, ok, err := LastSignature(dir, pubOf(t, dir))
		if err != nil || !ok || seq != 5 {
			t.Fatalf("LastSignature = %d, %v, %v; want 5", seq, ok, err)
		}
	})
	t.Run("another key", func(t *testing.T) {
		dir, other := t.TempDir(), t.TempDir()
		logChain(t, dir, nil, 3)
		logChain(t, other, nil, 1)
		if _, _, ok, err := LastSignature(dir, pubOf(t, other)); ok || err != nil {
			t.Fatalf("another key's LastSignature ok = %v, %v", ok, err)
		}
	})
	t.Run("a forged signature", func(t *testing.T) {
		dir := t.TempDir()
		logChain(t, dir, nil, 3)
		segs, _ := listSegments(dir)
		p := segs[len(segs)-1].path
		b, _ := os.ReadFile(p)
		i := strings.LastIndex(string(b), `"sig":"`) + len(`"sig":"`)
		if b[i] == '0' {
			b[i] = '1'
		} else {
			b[i] = '0'
		}
		os.WriteFile(p, b, 0o600)
		if _, _, ok, err := LastSignature(dir, pubOf(t, dir)); ok || err != nil {
			t.Fatalf("a forged last signature: ok = %v, %v", ok, err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		dir := t.TempDir()
		logChain(t, dir, nil, 0)
		if _, _, ok, err := LastSignature(dir, pubOf(t, dir)); ok || err != nil {
			t.Fatalf("no entries: ok = %v, %v", ok, err)
		}
	})
}

// TestMergeVerifiesFirst: Merge shows nothing of a lane altered in the
// middle, rather than showing its first entries as vouched for and
// failing only when the alteration turns up.
func TestMergeVerifiesFirst(t *testing.T) {
	dir := t.TempDir()
	logChain(t, dir, &Options{MaxBatch: 1}, 6)
	segs, _ := listSegments(dir)
	b, _ := os.ReadFile(segs[0].path)
	s := strings.Replace(string(b), `"principal":"user4"`, `"principal":"mallory"`, 1)
	if s == string(b) {
		t.Fatal("the chain has no entry to alter")
	}
	os.WriteFile(segs[0].path, []byte(s), 0o600)
	shown := 0
	err := Merge([]Lane{{Dir: dir}}, func(Lane, *record.Entry, bool) error { shown++; return nil })
	if err == nil || shown != 0 {
		t.Fatalf("Merge of an altered chain showed %d entries, error %v; want none and an error", shown, err)
	}
}

// TestLaneSignatureUsesTheServersKey: a later lane is checked with the key
// of the server's first lane, not with one it holds beside itself (a lane
// made by hand, signed by a key of its own, vouches for nothing).
func TestLaneSignatureUsesTheServersKey(t *testing.T) {
	root := t.TempDir()
	l, _, err := OpenLane(root, "fs", nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	forged := filepath.Join(root, "fs@2")
	logChain(t, forged, nil, 3) // its own key, beside it
	if sig, err := LaneSignature(forged); err != nil || sig.OK {
		t.Fatalf("a hand-made lane with its own key: %+v, %v; want nothing vouched for", sig, err)
	}
	if sig, err := LaneSignature(filepath.Join(root, "fs")); err != nil || sig.OK {
		t.Fatalf("an empty first lane: %+v, %v", sig, err)
	}
}
