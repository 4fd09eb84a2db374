package chain

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"
)

// verdict is what Verify said, reduced to what a test pins down.
type verdict struct {
	Break     BreakKind // 0: verified
	Seq       uint64    // of the break
	Entries   uint64
	Signed    uint64
	Acked     uint64
	TornBytes int64
}

func verifyPicture(t *testing.T, p *picture, all bool) verdict {
	t.Helper()
	dir := p.write()
	rep, err := VerifyWith(dir, p.pub, &VerifyOptions{AllSignatures: all})
	v := verdict{Entries: rep.Entries, Signed: rep.Signed, Acked: rep.Acked, TornBytes: rep.TornBytes}
	var be *BreakError
	switch {
	case errors.As(err, &be):
		v = verdict{Break: be.Kind, Seq: be.Seq}
		if !strings.Contains(be.Error(), be.Kind.String()) || be.File == "" {
			t.Errorf("BreakError does not say what and where: %v", be)
		}
	case err != nil:
		t.Fatalf("Verify: %v (not a BreakError)", err)
	}
	return v
}

// TestTamper draws a chain, alters it, and checks the exact verdict: a cut
// at the tail verifies and says how much is signed; anything else is a
// break of a named kind at a named seq.
func TestTamper(t *testing.T) {
	_, fresh := testKey(t, 99) // a key that is not the chain's

	tests := []struct {
		name  string
		chain string
		alter func(p *picture)
		want  verdict
		// wantAll is the verdict with AllSignatures, when it differs.
		wantAll *verdict
	}{
		{
			name:  "untouched",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {},
			want:  verdict{Entries: 4, Signed: 4},
		},
		{
			name:  "untouched, batched",
			chain: "G -> A B C",
			alter: func(p *picture) {},
			want:  verdict{Entries: 4, Signed: 4},
		},
		{
			name:  "untouched, three segments",
			chain: "G -> A | B -> C | D",
			alter: func(p *picture) {},
			want:  verdict{Entries: 5, Signed: 5},
		},

		// Truncation at the tail: verifies, and the report says how much.
		{
			name:  "torn mid-C",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.remove("C", true); l := p.line("C", false); *l = (*l)[:len(*l)/2] },
			want:  verdict{Entries: 3, Signed: 3, TornBytes: -1},
		},
		{
			name:  "C's checkpoint missing",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.remove("C", true) },
			want:  verdict{Entries: 4, Signed: 3},
		},
		{
			name:  "torn mid-checkpoint of C",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { l := p.line("C", true); *l = (*l)[:40] },
			want:  verdict{Entries: 4, Signed: 3, TornBytes: 40},
		},
		{
			name:  "torn just before C's last newline",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { l := p.line("C", true); *l = strings.TrimSuffix(*l, "\n") },
			want:  verdict{Entries: 4, Signed: 3, TornBytes: -1},
		},
		{
			name:  "batch cut after B",
			chain: "G -> A B C",
			alter: func(p *picture) { p.remove("C", true); p.remove("C", false) },
			want:  verdict{Entries: 3, Signed: 1},
		},
		{
			name:  "forged D appended without a checkpoint",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				p.batch(fresh, "D")
				p.remove("D", true)
			},
			want: verdict{Entries: 5, Signed: 4},
		},
		{
			name:  "every checkpoint stripped",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				for _, l := range []string{"G", "A", "B", "C"} {
					p.remove(l, true)
				}
			},
			want: verdict{Entries: 4, Signed: 0},
		},

		// Tampering in the middle: a break, named.
		{
			name:  "edit B's principal",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.edit("B", false, func(e *record.Entry) { e.Principal = "mallory" }) },
			want:  verdict{Break: BreakHash, Seq: 3},
		},
		{
			name:  "edit B's path, rehash B",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.edit("B", true, func(e *record.Entry) { e.Caps[0].Path = "/etc/passwd" }) },
			want:  verdict{Break: BreakCheckpoint, Seq: 3},
		},
		{
			name:  "edit B's decision, rehash B inside a batch",
			chain: "G -> A B C",
			alter: func(p *picture) { p.edit("B", true, func(e *record.Entry) { e.Decision = record.Deny }) },
			want:  verdict{Break: BreakLink, Seq: 4},
		},
		{
			name:  "edit B, rehash B, rewrite its checkpoint's hash (signature now wrong)",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				p.edit("B", true, func(e *record.Entry) { e.Principal = "mallory" })
				l := p.line("B", true)
				old := (*l)[strings.Index(*l, `"hash":"`)+8:][:64]
				*l = strings.Replace(*l, old, p.entries["B"].Hash.String(), 1)
			},
			// By default only the last signature is verified; C's link
			// gives the edit away.
			want:    verdict{Break: BreakLink, Seq: 4},
			wantAll: &verdict{Break: BreakSignature, Seq: 3},
		},
		{
			name:  "edit B, rehash everything after it",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				p.edit("B", true, func(e *record.Entry) { e.Principal = "mallory" })
				p.edit("C", true, func(e *record.Entry) { e.Prev = p.entries["B"].Hash })
				for _, l := range []string{"B", "C"} {
					line := p.line(l, true)
					old := (*line)[strings.Index(*line, `"hash":"`)+8:][:64]
					*line = strings.Replace(*line, old, p.entries[l].Hash.String(), 1)
				}
			},
			want:    verdict{Break: BreakSignature, Seq: 4},
			wantAll: &verdict{Break: BreakSignature, Seq: 3},
		},
		{
			name:  "edit B, rehash and re-sign everything with a fresh key",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				p.edit("B", true, func(e *record.Entry) { e.Principal = "mallory" })
				p.edit("C", true, func(e *record.Entry) { e.Prev = p.entries["B"].Hash })
				p.resign("B", fresh)
				p.resign("C", fresh)
			},
			want: verdict{Break: BreakSignature, Seq: 3},
		},
		{
			name:  "delete B",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.remove("B", true); p.remove("B", false) },
			want:  verdict{Break: BreakSeq, Seq: 3},
		},
		{
			name:  "delete B's line only",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.remove("B", false) },
			want:  verdict{Break: BreakCheckpoint, Seq: 3},
		},
		{
			name:  "delete B inside a batch",
			chain: "G -> A B C",
			alter: func(p *picture) { p.remove("B", false) },
			want:  verdict{Break: BreakSeq, Seq: 3},
		},
		{
			name:  "delete G",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.remove("G", true); p.remove("G", false) },
			want:  verdict{Break: BreakSeq, Seq: 1},
		},
		{
			name:  "swap B and C",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				sb, ib := p.find("B", false)
				sc, ic := p.find("C", false)
				p.segs[sb][ib], p.segs[sc][ic] = p.segs[sc][ic], p.segs[sb][ib]
				// Lines now: G ckG A ckA C ckB B ckC.
			},
			want: verdict{Break: BreakSeq, Seq: 3},
		},
		{
			name:  "B duplicated",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				s, i := p.find("B", true)
				p.segs[s] = append(p.segs[s][:i+1], append([]string{p.segs[s][i-1], p.segs[s][i]}, p.segs[s][i+1:]...)...)
			},
			want: verdict{Break: BreakSeq, Seq: 4},
		},
		{
			name:  "forged D appended with a fresh key",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.batch(fresh, "D") },
			want:  verdict{Break: BreakSignature, Seq: 5},
		},
		{
			name:  "flip a byte of C's signature (the last)",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { flipSig(p.line("C", true)) },
			want:  verdict{Break: BreakSignature, Seq: 4},
		},
		{
			name:  "flip a byte of A's signature",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { flipSig(p.line("A", true)) },
			// Redundant by default: C's checkpoint covers A. See
			// VerifyOptions.AllSignatures.
			want:    verdict{Entries: 4, Signed: 4},
			wantAll: &verdict{Break: BreakSignature, Seq: 2},
		},
		{
			name:  "A's checkpoint signed by a fresh key",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.resign("A", fresh) },
			want:  verdict{Break: BreakSignature, Seq: 2},
		},
		{
			name:  "checkpoint moved before its entry",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				s, i := p.find("B", false)
				p.segs[s][i], p.segs[s][i+1] = p.segs[s][i+1], p.segs[s][i]
			},
			want: verdict{Break: BreakCheckpoint, Seq: 3},
		},
		{
			name:  "B's line replaced by garbage",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { *p.line("B", false) = "{\"hello\":1}\n" },
			want:  verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "blank line inserted",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { *p.line("B", false) = "\n" + *p.line("B", false) },
			want:  verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "CRLF line ends",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) { l := p.line("A", false); *l = strings.TrimSuffix(*l, "\n") + "\r\n" },
			want:  verdict{Break: BreakMalformed, Seq: 2},
		},
		{
			name:  "B re-spelled non-canonically, hash recomputed over the new bytes",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				l := p.line("B", false)
				*l = strings.Replace(*l, `"principal":"user-b"`, `"principal":"user-\u0062"`, 1)
			},
			want: verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "unsigned C re-spelled non-canonically, hash recomputed over the new bytes",
			chain: "G -> A -> B -> C",
			alter: func(p *picture) {
				p.remove("C", true)
				l := p.line("C", false)
				body := strings.Replace((*l)[:len(*l)-1-hashSuffixLen], `"principal":"user-c"`, `"principal":"user-\u0063"`, 1)
				*l = body + `,"hash":"` + record.NewHasher().Body([]byte(body)).String() + "\"}\n"
			},
			want: verdict{Break: BreakMalformed, Seq: 4},
		},
		{
			name:  "middle segment deleted",
			chain: "G -> A | B -> C | D",
			alter: func(p *picture) { p.segs[1] = nil },
			want:  verdict{Break: BreakSeq, Seq: 3},
		},
		{
			name:  "first segment ends unsigned",
			chain: "G -> A | B -> C",
			alter: func(p *picture) { p.remove("A", true) },
			want:  verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "first segment torn",
			chain: "G -> A | B -> C",
			alter: func(p *picture) { l := p.line("A", true); *l = (*l)[:10] },
			want:  verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "segment starting with a checkpoint",
			chain: "G -> A | B -> C",
			alter: func(p *picture) {
				ck := *p.line("A", true)
				p.remove("A", true)
				p.segs[1] = append([]string{ck}, p.segs[1]...)
			},
			want: verdict{Break: BreakCheckpoint, Seq: 2},
		},

		// Ack lines (ack.go): a batch acknowledged before it was signed.
		{
			name:  "acked, not yet signed",
			chain: "G -> A B ack",
			alter: func(p *picture) {},
			want:  verdict{Entries: 3, Signed: 1, Acked: 3},
		},
		{
			name:  "acked, then signed",
			chain: "G -> A ack ck -> B",
			alter: func(p *picture) {},
			want:  verdict{Entries: 3, Signed: 3},
		},
		{
			name:  "acked, then the next batch signs both",
			chain: "G -> A ack B C",
			alter: func(p *picture) {},
			want:  verdict{Entries: 4, Signed: 4},
		},
		{
			name:  "acked, then more entries unsigned",
			chain: "G -> A ack B C ack",
			alter: func(p *picture) { p.segs[0] = p.segs[0][:len(p.segs[0])-1] },
			want:  verdict{Entries: 4, Signed: 1, Acked: 2},
		},
		{
			name:  "an ack by another key is only a mark to a verifier",
			chain: "G -> A",
			alter: func(p *picture) { p.ackBatch(fresh, "B") },
			want:  verdict{Entries: 3, Signed: 2, Acked: 3},
		},
		{
			name:  "segment ending with an ack",
			chain: "G -> A ack | B",
			alter: func(p *picture) {},
			want:  verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "segment starting with an ack",
			chain: "G -> A ack ck | B",
			alter: func(p *picture) {
				ack := p.segs[0][2]
				p.segs[0] = slices.Delete(p.segs[0], 2, 3)
				p.segs[1] = append([]string{ack}, p.segs[1]...)
			},
			want: verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "ack after a checkpoint",
			chain: "G -> A ack ck",
			alter: func(p *picture) { p.segs[0][2], p.segs[0][3] = p.segs[0][3], p.segs[0][2] },
			want:  verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "two acks in a row",
			chain: "G -> A ack",
			alter: func(p *picture) { p.segs[0] = append(p.segs[0], p.segs[0][len(p.segs[0])-1]) },
			want:  verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "ack of an earlier entry",
			chain: "G -> A B ack",
			alter: func(p *picture) {
				k := newAcker(p.priv).make(2, p.entries["A"].Hash)
				p.segs[0][len(p.segs[0])-1] = string(appendAck(nil, &k))
			},
			want: verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "ack of another hash",
			chain: "G -> A ack",
			alter: func(p *picture) {
				k := newAcker(p.priv).make(2, p.entries["G"].Hash)
				p.segs[0][len(p.segs[0])-1] = string(appendAck(nil, &k))
			},
			want: verdict{Break: BreakCheckpoint, Seq: 2},
		},
		{
			name:  "ack in upper-case hex",
			chain: "G -> A ack",
			alter: func(p *picture) {
				l := &p.segs[0][len(p.segs[0])-1]
				i := strings.Index(*l, `"mac":"`) + 7
				*l = (*l)[:i] + strings.ToUpper((*l)[i:i+64]) + (*l)[i+64:]
			},
			want: verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "ack with a space",
			chain: "G -> A ack",
			alter: func(p *picture) {
				l := &p.segs[0][len(p.segs[0])-1]
				*l = strings.Replace(*l, `{"ack":`, `{"ack": `, 1)
			},
			want: verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "ack without its mac",
			chain: "G -> A ack",
			alter: func(p *picture) {
				l := &p.segs[0][len(p.segs[0])-1]
				*l = (*l)[:strings.Index(*l, `,"mac"`)] + "}\n"
			},
			want: verdict{Break: BreakMalformed, Seq: 3},
		},
		{
			name:  "ack 0",
			chain: "G",
			alter: func(p *picture) {
				k := newAcker(p.priv).make(0, record.Digest{})
				p.segs[0] = append([]string{string(appendAck(nil, &k))}, p.segs[0]...)
			},
			want: verdict{Break: BreakMalformed, Seq: 1},
		},
		{
			name:  "checkpoint signing an acked entry moved after the next entry",
			chain: "G -> A ack ck -> B",
			alter: func(p *picture) {
				// G, ck, A, ack, ck of A, B, ck of B
				ck := p.segs[0][4]
				p.segs[0] = slices.Delete(p.segs[0], 4, 5)
				p.segs[0] = slices.Insert(p.segs[0], 5, ck)
			},
			want: verdict{Break: BreakCheckpoint, Seq: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, all := range []bool{false, true} {
				p := draw(t, tt.chain)
				tt.alter(p)
				want := tt.want
				if all && tt.wantAll != nil {
					want = *tt.wantAll
				}
				got := verifyPicture(t, p, all)
				if want.TornBytes == -1 { // some bytes, however many
					want.TornBytes = got.TornBytes
					if got.TornBytes <= 0 {
						t.Errorf("TornBytes = %d, want > 0", got.TornBytes)
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("AllSignatures=%v: verdict (-want +got):\n%s", all, diff)
				}
			}
		})
	}
}

func flipSig(line *string) {
	i := strings.Index(*line, `"sig":"`) + 7 + 10
	b := []byte(*line)
	if b[i] == '0' {
		b[i] = '1'
	} else {
		b[i] = '0'
	}
	*line = string(b)
}

// TestVerifyErrors covers what is not a chain at all.
func TestVerifyErrors(t *testing.T) {
	p := draw(t, "G -> A")
	dir := p.write()
	if _, err := Verify(dir, p.pub[:31]); err == nil {
		t.Error("Verify accepted a 31-byte key")
	}
	if _, err := Verify(t.TempDir(), p.pub); err == nil {
		t.Error("Verify accepted a directory without segments")
	}
	if _, err := Verify(dir+"/missing", p.pub); err == nil {
		t.Error("Verify accepted a missing directory")
	}
	otherPub, _ := testKey(t, 7)
	_, err := Verify(dir, otherPub)
	var be *BreakError
	if !errors.As(err, &be) || be.Kind != BreakSignature {
		t.Errorf("Verify with another key: %v, want a signature break", err)
	}
}

// TestSmallBlocks reads chains in blocks far smaller than a line, so that
// every line is cut across blocks, and checks that nothing changes.
func TestSmallBlocks(t *testing.T) {
	defer func(n int) { blockSize = n }(blockSize)
	for _, size := range []int{1, 7, 97, 1000} {
		blockSize = size
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			p := draw(t, "G -> A B | C -> D E")
			rep, err := Verify(p.write(), p.pub)
			if err != nil || rep.Entries != 6 || rep.Signed != 6 || rep.Segments != 2 {
				t.Errorf("Verify = %+v, %v", rep, err)
			}
			var seqs []uint64
			if err := Scan(p.write(), func(e *record.Entry) error { seqs = append(seqs, e.Seq); return nil }); err != nil || len(seqs) != 6 {
				t.Errorf("Scan = %v, %v", seqs, err)
			}
			p.edit("D", false, func(e *record.Entry) { e.Reason = "x" })
			if got := verifyPicture(t, p, false); got.Break != BreakHash || got.Seq != 5 {
				t.Errorf("edited D: %+v", got)
			}
			q := draw(t, "G -> A B | C -> D E")
			l := q.line("E", true)
			*l = (*l)[:17]
			if got := verifyPicture(t, q, false); got != (verdict{Entries: 6, Signed: 4, TornBytes: 17}) {
				t.Errorf("torn: %+v", got)
			}
			// An unsigned tail is decoded strictly at the end, from copies
			// of its lines, or (past maxTail) as each block is released.
			for _, tail := range []int{maxTail, 0} {
				defer func(n int) { maxTail = n }(maxTail)
				maxTail = tail
				for _, label := range []string{"D", "E"} {
					r := draw(t, "G -> A B | C -> D E")
					r.remove("E", true)
					// Re-spell label, then relink and rehash what follows.
					old, now := r.entries[label].Hash.String(), ""
					lines := []*string{r.line(label, false)}
					if label != "E" {
						lines = append(lines, r.line("E", false))
					}
					for k, line := range lines {
						body := (*line)[:len(*line)-1-hashSuffixLen]
						if k == 0 {
							body = strings.Replace(body, `"session":"s1"`, `"session":"\u00731"`, 1)
						} else {
							body = strings.Replace(body, `"prev":"`+old, `"prev":"`+now, 1)
						}
						now = record.NewHasher().Body([]byte(body)).String()
						*line = body + `,"hash":"` + now + "\"}\n"
					}
					want := verdict{Break: BreakMalformed, Seq: r.entries[label].Seq}
					if got := verifyPicture(t, r, false); got != want {
						t.Errorf("unsigned %s re-spelled, maxTail %d: %+v, want %+v", label, tail, got, want)
					}
				}
			}
		})
	}
}

// TestVerifyAckKey: with the private key, Verify checks the MAC of the
// last ack after the last checkpoint: this key's writer's, or a break.
func TestVerifyAckKey(t *testing.T) {
	_, fresh := testKey(t, 99)
	tests := []struct {
		name    string
		chain   string
		alter   func(p *picture)
		key     func(p *picture) ed25519.PrivateKey
		want    BreakKind // 0: verified
		checked bool
		err     string
	}{
		{name: "acked tail", chain: "G -> A B ack", checked: true},
		{name: "acked twice", chain: "G -> A ack B ack", checked: true},
		{name: "signed, no ack after", chain: "G -> A ack ck"},
		{name: "ack by another key", chain: "G -> A", alter: func(p *picture) { p.ackBatch(fresh, "B") }, want: BreakSignature},
		{name: "another key given", chain: "G -> A ack", key: func(*picture) ed25519.PrivateKey { return fresh }, err: "not the public key's"},
		{name: "a short key given", chain: "G -> A ack", key: func(*picture) ed25519.PrivateKey { return fresh[:10] }, err: "not the public key's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := draw(t, tt.chain)
			if tt.alter != nil {
				tt.alter(p)
			}
			key := p.priv
			if tt.key != nil {
				key = tt.key(p)
			}
			rep, err := VerifyWith(p.write(), p.pub, &VerifyOptions{AckKey: key})
			var be *BreakError
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Verify = %v, want an error saying %q", err, tt.err)
				}
			case tt.want != 0:
				if !errors.As(err, &be) || be.Kind != tt.want {
					t.Fatalf("Verify = %v, want a %v", err, tt.want)
				}
			case err != nil:
				t.Fatal(err)
			case rep.AckChecked != tt.checked:
				t.Fatalf("AckChecked = %v, want %v (%+v)", rep.AckChecked, tt.checked, rep)
			}
		})
	}
}
