package chain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"
)

// writeChain writes ents in batches of batch, a new segment every segEvery
// batches, as a Log would, and returns the directory. It fills in the
// fields a Log assigns.
func writeChain(t testing.TB, ents []*record.Entry, batch, segEvery int) string {
	t.Helper()
	_, priv := testKey(t, 0)
	dir := t.TempDir()
	var out []byte
	var prev record.Digest
	seq, first := uint64(1), uint64(1)
	batches := 0
	flushSeg := func() {
		if len(out) == 0 {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, segmentName(first)), out, 0o600); err != nil {
			t.Fatal(err)
		}
		out, first = nil, seq
	}
	for i := 0; i < len(ents); i += batch {
		var reqs []*request
		for _, e := range ents[i:min(i+batch, len(ents))] {
			r := newRequest(t, e)
			reqs = append(reqs, r)
		}
		var res []result
		out, res, prev, seq = appendBatch(out, nil, priv, prev, seq, reqs)
		for k, r := range res {
			e := ents[i+k]
			e.V, e.Seq, e.Prev, e.Hash = record.Version, r.seq, r.prev, r.hash
		}
		if batches++; batches%segEvery == 0 {
			flushSeg()
		}
	}
	flushSeg()
	return dir
}

// scanEntries are entries whose strings exercise the decoder's interning:
// many distinct short strings (so that they collide in its table), strings
// of every length around 8, 16 and its limit, escapes and non-ASCII text.
func scanEntries(n int) []*record.Entry {
	ents := make([]*record.Entry, n)
	for i := range ents {
		s := strings.Repeat("x", i%140)
		ents[i] = &record.Entry{
			Time:      time.Date(2026, 11, 29, 12, 0, 0, i, time.UTC),
			Session:   fmt.Sprintf("s%d", i%3000),
			Principal: []string{"alice", "bob", "carol\u00e9", "d\"q"}[i%4],
			Roles:     [][]string{nil, {"dev"}, {"dev", "ops", fmt.Sprint(i % 17)}}[i%3],
			Origin:    "interactive",
			Taint:     i%5 == 0,
			Server:    fmt.Sprint("srv", i%20),
			Tool:      s,
			Bound:     i%2 == 0,
			Tier:      "data-read",
			Caps: []record.Cap{
				{Kind: "fs.read", Path: fmt.Sprintf("/home/u/%d/%s", i, s)},
				{Kind: "net.connect", Scheme: "https", Host: "h" + fmt.Sprint(i%9), Port: uint16(i%65535 + 1), URL: "https://h/\t" + s},
			}[:1+i%2],
			Decision: []string{record.Allow, record.Deny, record.Ask}[i%3],
			Mode:     record.Enforce,
			Rules:    []string{"r" + s[:min(i%9, len(s))], "r2"},
			Reason:   s + "\n",
			ArgsHash: digestOf(fmt.Sprint(i)),
		}
	}
	return ents
}

func TestScanEntries(t *testing.T) {
	defer func(n int) { blockSize = n }(blockSize)
	blockSize = 4096 // many blocks in flight
	ents := scanEntries(5000)
	dir := writeChain(t, ents, 7, 50)

	// Every entry, in order, equal to what was written; strings and slices
	// are kept past fn and past Scan.
	var got []record.Entry
	if err := Scan(dir, func(e *record.Entry) error { got = append(got, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ents) {
		t.Fatalf("Scan passed %d entries, want %d", len(got), len(ents))
	}
	for i := range ents {
		if !sameEntry(t, ents[i], &got[i]) {
			t.Fatalf("entry %d (-want +got):\n%s", i+1, cmp.Diff(*ents[i], got[i]))
		}
	}

	// ScanMap: the same entries, each with its own result.
	var seqs []uint64
	err := ScanMap(dir, func(e *record.Entry, r *string) {
		*r = fmt.Sprint(e.Seq, e.Caps[0].Path)
	}, func(e *record.Entry, r *string) error {
		if want := fmt.Sprint(e.Seq, ents[e.Seq-1].Caps[0].Path); *r != want {
			return fmt.Errorf("seq %d: result %q, want %q", e.Seq, *r, want)
		}
		if !sameEntry(t, ents[e.Seq-1], e) {
			return fmt.Errorf("seq %d (-want +got):\n%s", e.Seq, cmp.Diff(ents[e.Seq-1], e))
		}
		seqs = append(seqs, e.Seq)
		return nil
	})
	if err != nil || len(seqs) != len(ents) || seqs[len(seqs)-1] != uint64(len(ents)) {
		t.Fatalf("ScanMap: %v after %d entries", err, len(seqs))
	}
}

// sameEntry reports whether a and b are the same entry: their canonical
// encodings, which spell every field but the hash, are.
func sameEntry(t *testing.T, a, b *record.Entry) bool {
	return a.Hash == b.Hash && a.V == b.V && bytes.Equal(mustCanon(t, a), mustCanon(t, b))
}

func TestScanMapStops(t *testing.T) {
	defer func(n int) { blockSize = n }(blockSize)
	blockSize = 4096
	ents := scanEntries(3000)
	dir := writeChain(t, ents, 64, 1000)
	errStop := errors.New("stop")

	tests := []struct {
		name    string
		edit    func(t *testing.T) // alters the chain; nil leaves it
		stopAt  uint64             // fn fails here; 0 never
		lastSeq uint64             // the last seq fn must see
		wantErr func(error) bool
	}{
		{
			name: "fn error", stopAt: 1234, lastSeq: 1234,
			wantErr: func(err error) bool { return errors.Is(err, errStop) },
		},
		{
			name: "break", lastSeq: 1999,
			edit: func(t *testing.T) {
				path := filepath.Join(dir, segmentName(1))
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				data = []byte(strings.Replace(string(data), `"seq":2000,`, `"seq":2002,`, 1))
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: func(err error) bool {
				var be *BreakError
				return errors.As(err, &be) && be.Seq == 2000 && be.Kind == BreakSeq
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.edit != nil {
				tt.edit(t)
			}
			var mu sync.Mutex
			worked := 0
			var last uint64
			err := ScanMap(dir, func(e *record.Entry, seq *uint64) {
				mu.Lock()
				worked++
				mu.Unlock()
				*seq = e.Seq
			}, func(e *record.Entry, seq *uint64) error {
				if *seq != e.Seq || e.Seq != last+1 {
					return fmt.Errorf("fn got seq %d (result %d) after %d", e.Seq, *seq, last)
				}
				last = e.Seq
				if e.Seq == tt.stopAt {
					return errStop
				}
				return nil
			})
			if !tt.wantErr(err) || last != tt.lastSeq {
				t.Errorf("ScanMap = %v with fn's last seq %d; want seq %d", err, last, tt.lastSeq)
			}
			// Nothing runs after ScanMap returns: the race detector sees a
			// late work call writing worked.
			if w := worked; w < int(last) {
				t.Errorf("work ran %d times for %d entries passed on", w, last)
			}
		})
	}
}

func TestScanNilFunctions(t *testing.T) {
	dir := t.TempDir()
	if err := Scan(dir, nil); err == nil {
		t.Error("Scan accepted a nil fn")
	}
	if err := ScanMap[int](dir, nil, func(*record.Entry, *int) error { return nil }); err == nil {
		t.Error("ScanMap accepted a nil work")
	}
	if err := ScanMap(dir, func(*record.Entry, *int) {}, nil); err == nil {
		t.Error("ScanMap accepted a nil fn")
	}
}
