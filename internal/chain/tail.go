package chain

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

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

// Signature is how far a chain's key vouches for its entries: the seq and
// hash its last valid checkpoint signs ([LastSignature]); OK false when
// none does.
type Signature struct {
	Seq  uint64
	Hash record.Digest
	OK   bool
}

// LaneSignature is [LastSignature] of the chain in dir, checked with the
// key of the lane's server: the chain.pub of its first lane, which signs
// every lane (as aegis verify checks by default), never a key a later lane
// holds beside itself. A chain without a key has nothing vouched for. It
// reads only the end of the chain: a reader that checks the links of what
// it shows (ScanFrom, LastEntries) must have read up to the signed entry
// before it trusts Covers; [LaneVerified] checks the whole chain first.
func LaneSignature(dir string) (Signature, error) {
	pub, ok, err := laneKey(dir)
	if err != nil || !ok {
		return Signature{}, err
	}
	seq, h, ok, err := LastSignature(dir, pub)
	return Signature{seq, h, ok}, err
}

// LaneVerified verifies the chain in dir whole, with its server's key, and
// returns how far that key vouches for it. An altered chain is an error
// (a *BreakError): nothing of it may be shown as vouched for.
func LaneVerified(dir string) (Signature, error) {
	pub, ok, err := laneKey(dir)
	if err != nil || !ok {
		return Signature{}, err
	}
	rep, err := Verify(dir, pub)
	if err != nil {
		return Signature{}, err
	}
	return Signature{Seq: rep.Signed, OK: rep.Signed > 0}, nil
}

// laneKey reads the public key of the server whose lane dir is: the first
// lane's chain.pub (dir's own for a chain that is no lane). ok is false
// when there is none.
func laneKey(dir string) (ed25519.PublicKey, bool, error) {
	keyDir := dir
	if server, n, ok := ParseLaneName(filepath.Base(dir)); ok && n > 1 {
		keyDir = filepath.Join(filepath.Dir(dir), server)
	}
	b, err := os.ReadFile(filepath.Join(keyDir, PublicKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("chain: %w", err)
	}
	pub, err := ParsePublicKey(b)
	if err != nil {
		return nil, false, fmt.Errorf("chain: %s: %w", keyDir, err)
	}
	return pub, true, nil
}

// Covers reports whether s vouches for e, an entry a reader that checks
// links (Scan, ScanFrom) read from the same chain: e comes no later than
// the signed entry, and is not the signed seq with another hash (a zero
// Hash, from LaneVerified, has had every link checked already).
func (s Signature) Covers(e *record.Entry) bool {
	return s.OK && (e.Seq < s.Seq || e.Seq == s.Seq && (s.Hash == record.Digest{} || e.Hash == s.Hash))
}

// Merge calls fn with every entry of every lane, the lanes merged by time
// (a lane's own entries in their order), and whether the lane's signature
// covers the entry. It holds a few entries of each lane at a time, however
// long the chains: a scanner per lane feeds a small channel. The entry is
// fn's to keep.
func Merge(lanes []Lane, fn func(ln Lane, e *record.Entry, verified bool) error) error {
	type head struct {
		ch  chan *record.Entry
		cur *record.Entry
		sig Signature
	}
	stop := make(chan struct{})
	defer close(stop)
	errs := make([]error, len(lanes))
	heads := make([]*head, len(lanes))
	for i, ln := range lanes {
		// Verified whole first: a stream cannot take back an entry it has
		// shown as vouched for when an alteration turns up later.
		sig, err := LaneVerified(ln.Dir)
		if err != nil {
			return err
		}
		h := &head{ch: make(chan *record.Entry, 64), sig: sig}
		heads[i] = h
		go func() {
			defer close(h.ch)
			errs[i] = Scan(ln.Dir, func(e *record.Entry) error {
				c := *e
				select {
				case h.ch <- &c:
					return nil
				case <-stop:
					return errMergeStopped
				}
			})
		}()
		h.cur = <-h.ch
	}
	for {
		k := -1
		for i, h := range heads {
			if h.cur != nil && (k < 0 || h.cur.Time.Before(heads[k].cur.Time)) {
				k = i
			}
		}
		if k < 0 {
			break
		}
		h := heads[k]
		if err := fn(lanes[k], h.cur, h.sig.Covers(h.cur)); err != nil {
			return err
		}
		h.cur = <-h.ch
	}
	// Every scanner has closed its channel, after setting its error.
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// errMergeStopped ends a lane's scan that Merge no longer reads.
var errMergeStopped = errors.New("chain: merge stopped")
