package chain

import (
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
// lines, then a torn one), or a torn checkpoint after an ack. Anything else (a broken line or link before the last checkpoint, a
// bad checkpoint, an ack whose MAC this key did not make) is not a crash
// artefact, and recoverTail refuses it rather than cut acknowledged entries
// or sign entries it did not write.
func (l *Log) recoverTail(segs []segment) (s segment, acked bool, err error) {
	kid := keyID(l.pub)
	for {
		s := segs[len(segs)-1]
		w, err := walk([]segment{s}, walkConfig{pub: l.pub, kid: kid, hash: true, midChain: true})
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
