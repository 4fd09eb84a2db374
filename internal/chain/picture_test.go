package chain

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// This file draws chains from pictures, in the manner of tka's chaintest:
//
//	"G -> A -> B -> C"    four batches of one entry, each with a checkpoint
//	"G -> A B C"          G, then one batch of three (one checkpoint, after C)
//	"G -> A | B -> C"     "|" starts a new segment file
//	"G -> A ack ck -> B"  A's batch ends with an ack line (ack.go), then a
//	                      checkpoint signs A ("ck": the writer's deferred one)
//
// The lines are made by the Log's own batch encoder, with fixed times and
// keys, so a test can then edit, delete, swap or forge them by label.

// testKey returns a deterministic key; different n give different keys.
func testKey(t testing.TB, n byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	seed := sha256.Sum256([]byte{'k', n})
	priv := ed25519.NewKeyFromSeed(seed[:])
	return priv.Public().(ed25519.PublicKey), priv
}

type picture struct {
	t       testing.TB
	pub     ed25519.PublicKey
	priv    ed25519.PrivateKey
	segs    [][]string // lines (with newline) per segment
	firsts  []uint64   // seq each segment is named for
	entries map[string]*record.Entry
	prev    record.Digest
	next    uint64
}

// pictureEntry is the entry drawn for label.
func pictureEntry(label string, seq uint64) *record.Entry {
	return &record.Entry{
		Time:      time.Date(2026, 11, 29, 12, 0, 0, int(seq), time.UTC),
		Session:   "s1",
		Principal: "user-" + strings.ToLower(label),
		Roles:     []string{"dev"},
		Origin:    "interactive",
		Server:    "fs",
		Tool:      "read_file",
		Bound:     true,
		Tier:      "data-read",
		Caps:      []record.Cap{{Kind: "fs.read", Path: "/home/u/" + label}},
		Decision:  record.Allow,
		Mode:      record.Enforce,
		Rules:     []string{"r-" + label},
		ArgsHash:  digestOf("args " + label),
	}
}

func draw(t testing.TB, spec string) *picture {
	t.Helper()
	pub, priv := testKey(t, 0)
	p := &picture{t: t, pub: pub, priv: priv, segs: [][]string{nil}, firsts: []uint64{1}, entries: map[string]*record.Entry{}, next: 1}
	var labels []string
	flush := func() {
		if len(labels) > 0 {
			p.batch(priv, labels...)
			labels = nil
		}
	}
	for _, tok := range strings.Fields(spec) {
		switch tok {
		case "ack":
			p.ackBatch(priv, labels...)
			labels = nil
		case "ck":
			flush()
			ck := signCheckpoint(priv, p.next-1, p.prev)
			seg := &p.segs[len(p.segs)-1]
			*seg = append(*seg, string(appendCheckpoint(nil, &ck)))
		case "->":
			flush()
		case "|":
			flush()
			p.segs = append(p.segs, nil)
			p.firsts = append(p.firsts, p.next)
		default:
			labels = append(labels, tok)
		}
	}
	flush()
	return p
}

// ackBatch appends one batch of the given labels, ending with an ack line
// made with priv's MAC key.
func (p *picture) ackBatch(priv ed25519.PrivateKey, labels ...string) {
	p.t.Helper()
	if len(labels) == 0 {
		p.t.Fatal("ack without entries in the picture")
	}
	seg := &p.segs[len(p.segs)-1]
	for _, l := range labels {
		e := pictureEntry(l, p.next)
		r := newRequest(p.t, e)
		line, d := r.t.AppendLine(nil, p.prev, p.next)
		e.V, e.Seq, e.Prev, e.Hash = record.Version, p.next, p.prev, d
		p.entries[l] = e
		*seg = append(*seg, string(line))
		p.prev, p.next = d, p.next+1
	}
	k := newAcker(priv).make(p.next-1, p.prev)
	*seg = append(*seg, string(appendAck(nil, &k)))
}

// batch appends one batch of the given labels, signed by priv.
func (p *picture) batch(priv ed25519.PrivateKey, labels ...string) {
	p.t.Helper()
	var reqs []*request
	for i, l := range labels {
		e := pictureEntry(l, p.next+uint64(i))
		r := newRequest(p.t, e)
		reqs = append(reqs, r)
		p.entries[l] = e
	}
	out, res, prev, next := appendBatch(nil, nil, priv, p.prev, p.next, reqs)
	for i, l := range labels {
		e := p.entries[l]
		e.V, e.Seq, e.Prev, e.Hash = record.Version, res[i].seq, res[i].prev, res[i].hash
	}
	p.prev, p.next = prev, next
	seg := &p.segs[len(p.segs)-1]
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if len(line) > 0 {
			*seg = append(*seg, string(line))
		}
	}
}

// find returns the segment and index of the entry line of label, or with
// ck true of the first checkpoint line after it.
func (p *picture) find(label string, ck bool) (int, int) {
	p.t.Helper()
	e := p.entries[label]
	if e == nil {
		p.t.Fatalf("no entry %q in the picture", label)
	}
	want := `"hash":"` + e.Hash.String() + `"}`
	for s, lines := range p.segs {
		for i, line := range lines {
			if strings.Contains(line, want) && strings.HasPrefix(line, `{"args_hash"`) {
				if !ck {
					return s, i
				}
				for j := i + 1; j < len(lines); j++ {
					if strings.HasPrefix(lines[j], `{"checkpoint"`) {
						return s, j
					}
				}
				p.t.Fatalf("no checkpoint after %s", label)
			}
		}
	}
	p.t.Fatalf("entry %q not found in the lines (already edited?)", label)
	return 0, 0
}

func (p *picture) line(label string, ck bool) *string {
	s, i := p.find(label, ck)
	return &p.segs[s][i]
}

// edit replaces the entry line of label with e encoded, its stored hash
// recomputed if rehash, else kept.
func (p *picture) edit(label string, rehash bool, change func(e *record.Entry)) {
	p.t.Helper()
	e := *p.entries[label]
	change(&e)
	if rehash {
		var err error
		if e.Hash, err = e.ComputeHash(); err != nil {
			p.t.Fatal(err)
		}
	}
	b, err := e.MarshalJSON()
	if err != nil {
		p.t.Fatal(err)
	}
	*p.line(label, false) = string(b) + "\n"
	p.entries[label] = &e
}

// resign replaces the checkpoint after label with one for label's current
// hash, signed by priv.
func (p *picture) resign(label string, priv ed25519.PrivateKey) {
	e := p.entries[label]
	ck := signCheckpoint(priv, e.Seq, e.Hash)
	line := p.line(label, true)
	*line = string(appendCheckpoint(nil, &ck))
}

func (p *picture) remove(label string, ck bool) {
	s, i := p.find(label, ck)
	p.segs[s] = slices.Delete(p.segs[s], i, i+1)
}

func mustPKCS8(t testing.TB, p *picture) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(p.priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// write lays the picture out in a fresh directory and returns it.
func (p *picture) write() string {
	p.t.Helper()
	dir := p.t.TempDir()
	for i, lines := range p.segs {
		if lines == nil {
			continue // a segment the test deleted
		}
		name := segmentName(p.firsts[i])
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "")), 0o600); err != nil {
			p.t.Fatal(err)
		}
	}
	return dir
}
