package chain

import (
	"fmt"
	"log/slog"
	"os"
)

// recoverTail brings the last segment back to its last checkpoint and sets
// l.next and l.prev from it. It returns the segment to append to.
//
// Why cutting there is safe: a batch's entries and its checkpoint go out in
// one write and one fsync, and Append returns only after that fsync. So an
// entry not followed by its checkpoint was never acknowledged, and a crash
// can leave only that: a prefix of the last batch (whole lines, then a torn
// one). Anything else (a broken line or link before the last checkpoint, a
// bad checkpoint) is not a crash artefact, and recoverTail refuses it rather
// than cut acknowledged entries.
func (l *Log) recoverTail(segs []segment) (segment, error) {
	kid := keyID(l.pub)
	for {
		s := segs[len(segs)-1]
		w, err := walk([]segment{s}, walkConfig{pub: l.pub, kid: kid, hash: true, midChain: true})
		if err != nil {
			return s, fmt.Errorf("chain: %s does not verify; not appending to it: %w", s.path, err)
		}
		if w.haveCk && !w.lastCk.verify(l.pub, kid) {
			return s, fmt.Errorf("chain: %s does not verify; not appending to it: %w", s.path,
				&BreakError{Kind: BreakSignature, Seq: w.lastCk.seq, Want: "a valid signature by key " + KeyID(l.pub), Got: "an invalid signature", File: s.name, Offset: w.lastCkOff})
		}
		if cut := w.lastCkEnd; cut < w.lastSize {
			dropped := w.entries
			if w.haveCk {
				dropped = w.next - 1 - w.lastCk.seq
			}
			l.logger.Warn("chain: cutting the unacknowledged tail of an interrupted batch",
				slog.String("segment", s.path), slog.Uint64("entries", dropped),
				slog.Int64("torn_bytes", w.torn), slog.Int64("offset", cut))
			if err := truncateSync(s.path, cut); err != nil {
				return s, fmt.Errorf("chain: recovering %s: %w", s.path, err)
			}
		}
		if w.haveCk {
			l.next, l.prev = w.lastCk.seq+1, w.lastCk.hash
			return s, nil
		}
		// No checkpoint: the segment held only an interrupted first batch.
		if len(segs) == 1 {
			if s.first != 1 {
				return s, fmt.Errorf("chain: %s is the only segment but starts at seq %d", s.path, s.first)
			}
			l.next, l.prev = 1, Digest{}
			return s, nil
		}
		if err := os.Remove(s.path); err != nil {
			return s, fmt.Errorf("chain: recovering: %w", err)
		}
		if err := syncDir(l.dir); err != nil {
			return s, fmt.Errorf("chain: recovering: %w", err)
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
