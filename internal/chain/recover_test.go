package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// walkWhole and walkTail are the two ways recovery can read the last
// segment s: all of it, as Open did before it read only the tail, and
// from the entry its last checkpoint signs.
func walkWhole(l *Log, s segment) (walkResult, error) {
	return walk([]segment{s}, l.recoveryConfig())
}

// TestOpenReadsTheTail: Open reads the last segment from the entry its
// last checkpoint signs, and what it finds wrong there it still refuses,
// as it did reading the whole segment.
func TestOpenReadsTheTail(t *testing.T) {
	tests := []struct {
		name  string
		chain string
		alter func(p *picture)
		want  BreakKind // the break Open reports; 0: Open appends
		next  uint64    // with want 0: the seq Append gets
	}{
		{name: "whole", chain: "G -> A -> B -> C", alter: func(p *picture) {}, next: 5},
		{name: "entry the last checkpoint signs, edited", chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.edit("C", false, func(e *record.Entry) { e.Reason = "x" }) }, want: BreakHash},
		{name: "entry the last checkpoint signs, edited and rehashed", chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.edit("C", true, func(e *record.Entry) { e.Reason = "x" }) }, want: BreakCheckpoint},
		{name: "last checkpoint replaced by an older one", chain: "G -> A -> B -> C",
			alter: func(p *picture) { *p.line("C", true) = *p.line("B", true) }, want: BreakCheckpoint},
		{name: "older checkpoint copied to the end", chain: "G -> A -> B -> C",
			alter: func(p *picture) { *p.line("C", true) += *p.line("A", true) }, want: BreakCheckpoint},
		{name: "last checkpoint with CRLF", chain: "G -> A -> B -> C",
			alter: func(p *picture) { l := p.line("C", true); *l = strings.TrimSuffix(*l, "\n") + "\r\n" }, want: BreakMalformed},
		{name: "last checkpoint alone in its segment", chain: "G -> A | B",
			alter: func(p *picture) { p.remove("B", false) }, want: BreakCheckpoint},
		{name: "entry after the checkpoint, edited", chain: "G -> A -> B C ack",
			alter: func(p *picture) { p.edit("B", true, func(e *record.Entry) { e.Reason = "x" }) }, want: BreakLink},
		{name: "entry after the checkpoint with the wrong seq", chain: "G -> A -> B C ack",
			alter: func(p *picture) { p.remove("B", false) }, want: BreakSeq},
		{name: "whole JSON fragment after the checkpoint", chain: "G -> A -> B",
			alter: func(p *picture) { *p.line("B", true) += `{"checkpoint":3}` + "\n" }, want: BreakMalformed},
		{name: "torn JSON fragment after the checkpoint", chain: "G -> A -> B",
			alter: func(p *picture) { *p.line("B", true) += `{"checkpoint":3}` }, next: 4},
		{name: "acked tail after an ack and checkpoint", chain: "G -> A ack ck -> B C ack", alter: func(p *picture) {}, next: 5},
		{name: "checkpoint signed after its ack", chain: "G -> A B ack ck", alter: func(p *picture) {}, next: 4},
		{name: "checkpoint signed after its ack, entry edited", chain: "G -> A B ack ck",
			alter: func(p *picture) { p.edit("B", false, func(e *record.Entry) { e.Reason = "x" }) }, want: BreakHash},
		// Before the entry the last checkpoint signs, Open reads nothing:
		// damage there is Verify's to report, and Open leaves it in place.
		{name: "entry before it, edited", chain: "G -> A -> B -> C",
			alter: func(p *picture) { p.edit("B", false, func(e *record.Entry) { e.Reason = "x" }) }, next: 5},
		{name: "garbage line before it", chain: "G -> A -> B -> C",
			alter: func(p *picture) { *p.line("B", true) += "garbage\n" }, next: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := draw(t, tt.chain)
			tt.alter(p)
			dir := p.write()
			installKey(t, dir, p)
			before, verr := Verify(dir, p.pub)
			l, err := Open(dir, &Options{Logger: quiet, wrap: noSync})
			if tt.want != 0 {
				var be *BreakError
				if !errors.As(err, &be) || be.Kind != tt.want {
					if err == nil {
						l.Close()
					}
					t.Fatalf("Open = %v; want a %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			seq, _, err := l.Append(context.Background(), entryN(0))
			l.Close()
			if err != nil || seq != tt.next {
				t.Fatalf("Append = %d, %v; want seq %d", seq, err, tt.next)
			}
			// Whatever Verify said before, it says after: appending hid
			// nothing.
			after, aerr := Verify(dir, p.pub)
			var bb, ba *BreakError
			switch {
			case verr == nil && aerr == nil:
				if after.Truncated() || after.Entries != tt.next {
					t.Fatalf("after Append, Verify = %+v", after)
				}
			case errors.As(verr, &bb) && errors.As(aerr, &ba):
				if *bb != *ba {
					t.Fatalf("Verify before Open = %v; after Append = %v", verr, aerr)
				}
			default:
				t.Fatalf("Verify before Open = %+v, %v; after Append = %+v, %v", before, verr, after, aerr)
			}
		})
	}
}

// TestOpenTailAgreesWithWhole: on the segments the crash and tamper
// pictures leave, reading the tail and reading the whole segment agree,
// but for damage before the entry the last checkpoint signs, which only
// the whole read sees.
func TestOpenTailAgreesWithWhole(t *testing.T) {
	for _, spec := range []string{
		"G -> A -> B -> C",
		"G -> A B C -> D E",
		"G -> A ack ck -> B C ack",
		"G -> A B ack ck",
		"G -> A | B ack C ack ck",
		"G -> A | B C D E F",
	} {
		t.Run(spec, func(t *testing.T) {
			p := draw(t, spec)
			_, last, data := writeLastSegment(t, p)
			starts := map[int]bool{0: true, len(data): true}
			for _, l := range splitLines(data) {
				starts[l.end] = true
			}
			dir := memTempDir(t)
			// Cuts around every line boundary and at every 23rd offset,
			// each also with a byte flipped near the cut.
			for cut := 0; cut <= len(data); cut++ {
				if !starts[cut] && !starts[cut-1] && !starts[cut+1] && cut%23 != 0 {
					continue
				}
				for _, flip := range []int{-1, 1, 30, 200} {
					seg := bytes.Clone(data[:cut])
					if flip >= 0 {
						if flip >= len(seg) {
							continue
						}
						seg[len(seg)-1-flip] ^= 0x20
					}
					compareTail(t, dir, p, last, seg)
				}
			}
		})
	}
}

// compareTail writes seg as the last segment of p's chain, in dir, and
// checks that
// reading its tail agrees with reading it whole.
func compareTail(t testing.TB, dir string, p *picture, last segment, seg []byte) {
	t.Helper()
	s := segment{first: last.first, name: last.name, path: filepath.Join(dir, last.name)}
	if err := os.WriteFile(s.path, seg, 0o600); err != nil {
		t.Fatal(err)
	}
	l := &Log{pub: p.pub}
	whole, werr := walkWhole(l, s)
	tail, terr := l.walkTail(s)
	if werr == nil {
		if terr != nil {
			t.Fatalf("%q: the whole segment reads, its tail: %v", seg, terr)
		}
		if !sameRecovery(whole, tail) {
			t.Fatalf("%q: whole %+v; tail %+v", seg, whole, tail)
		}
		return
	}
	if terr != nil {
		if terr.Error() != werr.Error() {
			t.Fatalf("%q: whole: %v; tail: %v", seg, werr, terr)
		}
		return
	}
	// Only the whole read sees a break: it must be before the entry the
	// last checkpoint signs, where the tail read starts.
	m, err := tailStart(bytes.NewReader(seg), int64(len(seg)), 0)
	var be *BreakError
	if err != nil || !errors.As(werr, &be) || m.ck < 0 || be.Offset > m.from {
		t.Fatalf("%q: whole: %v; the tail (from %+v) reads", seg, werr, m)
	}
}

// sameRecovery reports whether two walks of a last segment tell recovery
// the same: where to cut, what to sign, how to go on.
func sameRecovery(a, b walkResult) bool {
	return a.next == b.next && a.prev == b.prev && a.haveCk == b.haveCk && a.lastCk == b.lastCk &&
		a.lastCkEnd == b.lastCkEnd && a.lastCkOff == b.lastCkOff && a.haveAck == b.haveAck && a.lastAck == b.lastAck &&
		a.lastAckEnd == b.lastAckEnd && a.lastAckOff == b.lastAckOff && a.lastSize == b.lastSize && a.torn == b.torn
}

// FuzzOpenTail compares the two reads of a last segment (compareTail) on
// segments made of a picture's lines and the fuzzer's bytes.
func FuzzOpenTail(f *testing.F) {
	p := draw(f, "G -> A ack ck -> B C ack")
	_, last, data := writeLastSegment(f, p)
	f.Add(data, uint16(len(data)), []byte(nil))
	f.Add(data, uint16(len(data)-40), []byte("\n"))
	f.Add(data, uint16(300), []byte(`{"checkpoint":2}`+"\n"))
	f.Add(data, uint16(len(data)), []byte(*p.line("A", true)))
	dir := memTempDir(f)
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, extra []byte) {
		seg := append(bytes.Clone(data[:min(int(cut), len(data))]), extra...)
		compareTail(t, dir, p, last, seg)
	})
}

// TestOpenLargeSegment: on a last segment of many blocks, Open reads the
// tail alone and recovers as a walk of the whole segment would, with a
// window shorter than a line too.
func TestOpenLargeSegment(t *testing.T) {
	defer func(w int) { tailWindow = w }(tailWindow)
	var spec strings.Builder
	spec.WriteString("G")
	for b := range 40 {
		spec.WriteString(" ->")
		for i := range 50 {
			fmt.Fprintf(&spec, " L%d", b*50+i)
		}
	}
	tests := []struct {
		name  string
		tail  string // drawn after spec
		alter func(p *picture)
		next  uint64
	}{
		{name: "signed", alter: func(p *picture) {}, next: 2002},
		{name: "acked tail", tail: " -> X Y ack", alter: func(p *picture) {}, next: 2004},
		{name: "acked tail, torn checkpoint", tail: " -> X Y ack ck", alter: func(p *picture) {
			l := &p.segs[0][len(p.segs[0])-1]
			*l = (*l)[:70]
		}, next: 2004},
		{name: "acked, then an unacked batch, torn", tail: " -> X Y ack Z ack", alter: func(p *picture) {
			p.segs[0] = append(p.segs[0][:len(p.segs[0])-1], `{"args_hash":"0`)
		}, next: 2004},
	}
	for _, window := range []int{64, 16 << 10} {
		tailWindow = window
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/window=%d", tt.name, window), func(t *testing.T) {
				p := draw(t, spec.String()+tt.tail)
				tt.alter(p)
				dir := p.write()
				installKeyFast(t, dir, p)
				segs, err := listSegments(dir)
				if err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(segs[0].path); err != nil || fi.Size() < int64(2*blockSize) {
					t.Fatalf("the segment is not large: %v, %v", fi.Size(), err)
				}
				l := &Log{pub: p.pub}
				whole, werr := walkWhole(l, segs[0])
				tail, terr := l.walkTail(segs[0])
				if werr != nil || terr != nil || !sameRecovery(whole, tail) {
					t.Fatalf("whole %+v, %v; tail %+v, %v", whole, werr, tail, terr)
				}
				if tail.entries > 4 {
					t.Errorf("the tail's walk read %d entries; want the one the last checkpoint signs and the few after", tail.entries)
				}
				lg, err := Open(dir, &Options{Logger: quiet, wrap: noSync})
				if err != nil {
					t.Fatal(err)
				}
				seq, _, err := lg.Append(context.Background(), entryN(0))
				lg.Close()
				if err != nil || seq != tt.next {
					t.Fatalf("Append = %d, %v; want seq %d", seq, err, tt.next)
				}
				if rep, err := Verify(dir, p.pub); err != nil || rep.Truncated() || rep.Entries != tt.next {
					t.Fatalf("Verify = %+v, %v", rep, err)
				}
			})
		}
	}
}
