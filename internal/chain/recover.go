package chain

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"

	"github.com/aegis-mcp/aegis/internal/record"
)

// recoverTail brings the last segment back to its last checkpoint, or to
// its last ack line after that, and sets l.next and l.prev from it. It
// returns the segment to append to, and whether it ends with entries that
// were acknowledged but not signed (acked), for Open to sign.
//
// Why cutting there is safe: a batch's entries and its checkpoint or ack go
// out in one write and one fsync, and Append returns only after that fsync.
// So an entry followed by neither was never acknowledged, and a crash can
// leave only that after acked batches: a prefix of the last batch (whole
// lines, then a torn one), or a torn checkpoint after an ack. Anything else
// it reads (a broken line or link, a last checkpoint that is not of the
// entry before it or not by this key, an ack whose MAC this key did not
// make) is not a crash artefact, and recoverTail refuses it rather than cut
// acknowledged entries or sign entries it did not write.
//
// It reads the segment from the entry its last checkpoint signs
// (walkTail), not from its start, so that how long Open takes does not
// grow with the segment. That is all it needs: it cuts only after that
// checkpoint, and signs only entries it hashed and linked to it. What it
// does not read, the signature vouches for already, and a new checkpoint
// vouches for no more of it: an alteration there stays a break for Verify
// to report (TestOpenReadsTheTail).
func (l *Log) recoverTail(segs []segment) (s segment, acked bool, err error) {
	kid := keyID(l.pub)
	for {
		s := segs[len(segs)-1]
		w, err := l.walkTail(s)
		if err != nil {
			return s, false, fmt.Errorf("chain: %s does not verify; not appending to it: %w", s.path, err)
		}
		if w.haveCk && !w.lastCk.verify(l.pub, kid) {
			return s, false, fmt.Errorf("chain: %s does not verify; not appending to it: %w", s.path,
				&BreakError{Kind: BreakSignature, Seq: w.lastCk.seq, Want: "a valid signature by key " + KeyID(l.pub), Got: "an invalid signature", File: s.name, Offset: w.lastCkOff})
		}
		if w.haveAck && !l.acker.check(&w.lastAck) {
			return s, false, fmt.Errorf("chain: %s: the ack of seq %d at offset %d was not made with this chain's key: not signing the entries before it", s.path, w.lastAck.seq, w.lastAckOff)
		}
		keep := w.lastCkEnd
		if w.haveAck {
			keep = w.lastAckEnd
		}
		if keep < w.lastSize {
			dropped := w.entries
			switch {
			case w.haveAck:
				dropped = w.next - 1 - w.lastAck.seq
			case w.haveCk:
				dropped = w.next - 1 - w.lastCk.seq
			}
			l.logger.Warn("chain: cutting the unacknowledged tail of an interrupted batch",
				slog.String("segment", s.path), slog.Uint64("entries", dropped),
				slog.Int64("torn_bytes", w.torn), slog.Int64("offset", keep))
			if err := truncateSync(s.path, keep); err != nil {
				return s, false, fmt.Errorf("chain: recovering %s: %w", s.path, err)
			}
		}
		switch {
		case w.haveAck:
			l.next, l.prev = w.lastAck.seq+1, w.lastAck.hash
			return s, true, nil
		case w.haveCk:
			l.next, l.prev = w.lastCk.seq+1, w.lastCk.hash
			return s, false, nil
		}
		// Neither: the segment held only an interrupted first batch.
		if len(segs) == 1 {
			if s.first != 1 {
				return s, false, fmt.Errorf("chain: %s is the only segment but starts at seq %d", s.path, s.first)
			}
			l.next, l.prev = 1, record.Digest{}
			return s, false, nil
		}
		if err := os.Remove(s.path); err != nil {
			return s, false, fmt.Errorf("chain: recovering: %w", err)
		}
		if err := syncDir(l.dir); err != nil {
			return s, false, fmt.Errorf("chain: recovering: %w", err)
		}
		segs = segs[:len(segs)-1]
	}
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// recoveryConfig is what recovery checks in the lines of the last segment
// it reads: their form, order and links, every entry's hash, and the key
// id of every checkpoint. The first entry read links to what the segment
// or the checkpoint after it vouches for.
func (l *Log) recoveryConfig() walkConfig {
	return walkConfig{pub: l.pub, kid: keyID(l.pub), hash: true, midChain: true}
}

// walkTail walks segment s as recovery needs it: from the entry its last
// checkpoint signs to its end. That checkpoint, whose signature
// recoverTail checks, covers every entry before through the links, and
// the walk checks the entry it signs, and everything after it, as a walk
// of the whole segment does; so the two agree on where to cut, what to
// sign and how the chain goes on. What it does not read is what a
// signature already vouches for: a line altered before that entry is for
// Verify to find, and recovery leaves it where it is.
//
// It walks the whole segment when the segment holds no checkpoint line
// (its batches are all unsigned, and recovery must read them all), and
// when the walk of its tail fails, so that the error is the one the whole
// segment's walk finds, at the first line that is wrong.
func (l *Log) walkTail(s segment) (walkResult, error) {
	cfg := l.recoveryConfig()
	if t, ck, ok := tailSegment(s); ok {
		w, err := walk([]segment{t}, cfg)
		if err == nil && w.haveCk && w.lastCkOff == ck {
			return w, nil
		}
	}
	return walk([]segment{s}, cfg)
}

// maxCheckpointLine is the length of the longest checkpoint line, newline
// included: a 20-digit seq, and hex digits of fixed lengths.
var maxCheckpointLine = len(appendCheckpoint(nil, &checkpoint{seq: 1<<64 - 1}))

// tailSegment returns the tail of s from the entry its last checkpoint
// signs, as a segment to walk, and the offset of that checkpoint. ok is
// false when s has no complete checkpoint line, or one that does not read
// as a checkpoint of an entry of s, or s cannot be read: s is then walked
// whole, which finds what is wrong.
func tailSegment(s segment) (t segment, ck int64, ok bool) {
	f, err := os.Open(s.path)
	if err != nil {
		return t, 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return t, 0, false
	}
	m, err := tailStart(f, fi.Size(), 0)
	if err != nil || m.ck < 0 {
		return t, 0, false
	}
	line := make([]byte, min(int64(maxCheckpointLine), fi.Size()-m.ck))
	if err := readFull(f, line, m.ck); err != nil {
		return t, 0, false
	}
	nl := bytes.IndexByte(line, '\n')
	if nl < 0 {
		return t, 0, false
	}
	c, err := decodeCheckpoint(line[:nl])
	if err != nil || c.seq < s.first {
		return t, 0, false
	}
	return segment{first: c.seq, name: s.name, path: s.path, from: m.from}, m.ck, true
}
