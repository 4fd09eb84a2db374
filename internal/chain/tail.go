package chain

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// TailSigned reports whether the chain in dir ends signed: whether the
// last line of its last segment that is not empty is complete and a
// checkpoint. A chain that ends otherwise (with an ack line, left by a
// writer that stopped before signing, or with a torn line) is one that the
// next [Open] of it tidies and signs. A directory without entries holds
// nothing to sign. TailSigned reads only the end of the last segment and
// vouches for nothing: run [Verify] for that.
func TailSigned(dir string) (bool, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return false, err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		signed, empty, err := segmentTailSigned(segs[i].path)
		if err != nil || !empty {
			return signed, err
		}
	}
	return true, nil
}

// segmentTailSigned reports whether the segment at path ends with a
// complete checkpoint line, or is empty.
func segmentTailSigned(path string) (signed, empty bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, fmt.Errorf("chain: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, false, fmt.Errorf("chain: %w", err)
	}
	if fi.Size() == 0 {
		return false, true, nil
	}
	// A checkpoint line is about 300 bytes: 4 KiB holds it and the end of
	// the line before.
	const window = 4 << 10
	off := max(fi.Size()-window, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return false, false, fmt.Errorf("chain: %w", err)
	}
	if buf[len(buf)-1] != '\n' {
		return false, false, nil
	}
	start := bytes.LastIndexByte(buf[:len(buf)-1], '\n') + 1
	if start == 0 && off > 0 {
		return false, false, nil // a last line longer than any checkpoint
	}
	return bytes.HasPrefix(buf[start:], checkpointPrefix), false, nil
}
