package chain

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"

	"github.com/aegis-mcp/aegis/internal/record"
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

// LastSignature returns the seq and hash that the last checkpoint of the
// chain in dir signs, when its signature is pub's: every entry up to seq
// that links to that hash is vouched for by the key, and every entry after
// it is not (yet) — one a crash left acknowledged and unsigned, or one
// anybody appended by hand. ok is false when no checkpoint of the last
// segments that hold one verifies. A checkpoint that does not verify is
// not skipped for an earlier one: what follows a bad signature vouches for
// nothing.
//
// It reads the segments from the last one back to the first that holds a
// checkpoint (a segment ends with one, so at most two in practice). It
// checks signatures only: the entries' links are the reader's to check
// (Scan and ScanFrom do).
func LastSignature(dir string, pub ed25519.PublicKey) (seq uint64, hash record.Digest, ok bool, err error) {
	segs, err := listSegments(dir)
	if err != nil {
		return 0, hash, false, err
	}
	id := keyID(pub)
	for i := len(segs) - 1; i >= 0; i-- {
		data, err := os.ReadFile(segs[i].path)
		if err != nil {
			return 0, hash, false, fmt.Errorf("chain: %w", err)
		}
		for end := len(data); end > 0; {
			start := bytes.LastIndexByte(data[:end-1], '\n') + 1
			line := bytes.TrimSuffix(data[start:end], []byte("\n"))
			end = start
			if !bytes.HasPrefix(line, checkpointPrefix) {
				continue
			}
			c, err := decodeCheckpoint(line)
			if err != nil || !c.verify(pub, id) {
				return 0, hash, false, nil
			}
			return c.seq, c.hash, true, nil
		}
	}
	return 0, hash, false, nil
}
