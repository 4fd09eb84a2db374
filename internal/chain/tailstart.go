package chain

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Open recovers a chain from the end of its last segment, not from its
// start (recover.go): a checkpoint signs, through the links, every entry
// before it, so what recovery must read is the entry the last checkpoint
// signs, that checkpoint, and what follows it. tailStart finds where that
// starts by reading the segment backwards, from its end, in windows.

// tailWindow is how much of a segment tailStart reads at a time, going
// back from its end. A batch's last entry, its ack and its checkpoint fit
// in one window, so one read finds them. It is a variable for tests.
var tailWindow = 16 << 10

// A tailMark is where recovery starts reading a segment.
type tailMark struct {
	// ck is the offset of the last complete line (one that ends in a
	// newline) that starts like a checkpoint; -1 when no line does.
	ck int64
	// from is the offset of the line that checkpoint must sign: the line
	// before it, or the line before that when the line before is an ack.
	// It is ck when the checkpoint is the first line.
	from int64
}

// tailStart returns the tailMark of the segment r of size bytes, reading
// window bytes at a time from its end (tailWindow when window <= 0). It
// reads only the bytes from the mark on, and the line before the mark's
// line: a line longer than the window is read in several windows, and a
// segment without a checkpoint line is read to its start. It tells lines
// apart by their newlines and by how they start, as a forward reader does
// (SPEC.md, "Files"); whether they are what they look like is for the
// walk from the mark to check. A segment shorter than size is an error,
// and so is a line it reads back over that is longer than maxLine
// (errLongLine).
func tailStart(r io.ReaderAt, size int64, window int) (tailMark, error) {
	if window <= 0 {
		window = tailWindow
	}
	b := backReader{r: r, size: size, window: window}
	// Complete lines end at the last newline; after it is a torn line.
	end, err := b.lastNewline(size)
	if err != nil || end < 0 {
		return tailMark{ck: -1}, err
	}
	for {
		// end is the newline of a line: find where that line starts.
		nl, err := b.lastNewline(end)
		if err != nil {
			return tailMark{ck: -1}, err
		}
		start := nl + 1
		ck, err := b.hasPrefix(start, checkpointPrefix)
		if err != nil {
			return tailMark{ck: -1}, err
		}
		if ck {
			return b.markAt(start)
		}
		if start == 0 {
			return tailMark{ck: -1}, nil
		}
		end = nl
	}
}

// markAt returns the mark of the checkpoint line at ck.
func (b *backReader) markAt(ck int64) (tailMark, error) {
	m := tailMark{ck: ck, from: ck}
	for step := 0; step < 2 && m.from > 0; step++ {
		nl, err := b.lastNewline(m.from - 1)
		if err != nil {
			return tailMark{ck: -1}, err
		}
		m.from = nl + 1
		if isAck, err := b.hasPrefix(m.from, ackPrefix); err != nil || !isAck {
			return m, err
		}
	}
	return m, nil
}

// A backReader reads a segment backwards, one window at a time, keeping
// the window read last.
type backReader struct {
	r      io.ReaderAt
	size   int64
	window int
	buf    []byte // the segment's bytes [off, off+len(buf))
	off    int64
}

// errLongLine is tailStart's error for a line longer than a chain line
// may be (maxLine): no writer makes one, and the walk of the whole segment
// reports it where it starts.
var errLongLine = errors.New("chain: a line longer than a chain line may be")

// lastNewline returns the offset of the last newline before pos, or -1
// when there is none. The bytes between are a line: when they are more
// than maxLine, it returns errLongLine, having read about maxLine of them.
func (b *backReader) lastNewline(pos int64) (int64, error) {
	end := pos
	for pos > 0 {
		if end-pos > int64(maxLine) {
			return 0, errLongLine
		}
		if pos <= b.off || pos > b.off+int64(len(b.buf)) {
			if err := b.load(pos); err != nil {
				return 0, err
			}
		}
		if i := bytes.LastIndexByte(b.buf[:pos-b.off], '\n'); i >= 0 {
			nl := b.off + int64(i)
			if end-nl-1 > int64(maxLine) {
				return 0, errLongLine
			}
			return nl, nil
		}
		pos = b.off
	}
	if end > int64(maxLine) {
		return 0, errLongLine
	}
	return -1, nil
}

// load reads the window that ends at end.
func (b *backReader) load(end int64) error {
	start := max(end-int64(b.window), 0)
	b.buf = grow(b.buf, int(end-start))
	if err := readFull(b.r, b.buf, start); err != nil {
		b.buf = b.buf[:0]
		return err
	}
	b.off = start
	return nil
}

// hasPrefix reports whether the segment's bytes at off start with p.
func (b *backReader) hasPrefix(off int64, p []byte) (bool, error) {
	n := min(int64(len(p)), b.size-off)
	if n < int64(len(p)) {
		return false, nil
	}
	if off >= b.off && off+n <= b.off+int64(len(b.buf)) {
		return bytes.HasPrefix(b.buf[off-b.off:], p), nil
	}
	got := make([]byte, n)
	if err := readFull(b.r, got, off); err != nil {
		return false, err
	}
	return bytes.Equal(got, p), nil
}

// readFull reads len(buf) bytes at off; fewer is an error.
func readFull(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("chain: reading %d bytes at offset %d: %w", len(buf), off, err)
}
