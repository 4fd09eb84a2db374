package chain

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/record"
)

// An ack line marks the end of a batch that was made durable, and
// acknowledged, before a checkpoint signed it:
//
//	{"ack":<seq>,"hash":"<64 hex>","mac":"<64 hex>"}
//
// A Log acknowledges a batch after writing and fsyncing its entries and an
// ack line, and signs a checkpoint later, off the appenders' path: the
// Ed25519 signature, with its tables cold between a proxy's calls, was the
// largest single cost of a proxied call. A checkpoint signs everything
// before it, so one signature covers all the batches acked within
// signDelay: the commit after that delay signs inline, and when no commit
// comes, the sign timer signs (commit.go).
//
// The MAC is HMAC-SHA256, under a key derived from the signing key, of the
// ack message (AckDomain, seq, hash). Only the writer can check it: it is
// how a Log reopened after a crash tells the entries it acknowledged, which
// it must keep and sign, from entries anyone appended to the file, which
// it must not sign. A verifier without the private key sees an ack as a
// mark and counts the entries before it as unsigned.
type ack struct {
	seq  uint64
	hash record.Digest
	mac  [sha256.Size]byte
}

// AckDomain is the domain-separation prefix of an ack's MAC message:
//
//	AckDomain || seq as 8 bytes big-endian || the 32-byte entry hash
const AckDomain = "aegis.chain.ack.v1\x00"

// ackKeyDomain separates the MAC key derived from the signing key's seed
// from every other use of the seed.
const ackKeyDomain = "aegis.chain.ack-key.v1\x00"

// acker makes and checks the MACs of ack lines.
type acker struct {
	mac hash.Hash
	// msg and out are sum's message and MAC, kept here so that passing
	// them to mac, an interface, allocates nothing.
	msg [len(AckDomain) + 8 + 32]byte
	out [sha256.Size]byte
}

// newAcker returns the acker of priv's chain: its MAC key is
// SHA-256(ackKeyDomain || the 32-byte Ed25519 seed).
func newAcker(priv ed25519.PrivateKey) *acker {
	h := sha256.New()
	h.Write([]byte(ackKeyDomain))
	h.Write(priv.Seed())
	return &acker{mac: hmac.New(sha256.New, h.Sum(nil))}
}

// sum returns the MAC of (seq, h).
func (a *acker) sum(seq uint64, h record.Digest) (out [sha256.Size]byte) {
	m := a.msg[:]
	copy(m, AckDomain)
	binary.BigEndian.PutUint64(m[len(AckDomain):], seq)
	copy(m[len(AckDomain)+8:], h[:])
	a.mac.Reset()
	a.mac.Write(m)
	return [sha256.Size]byte(a.mac.Sum(a.out[:0]))
}

// make returns the ack of (seq, h).
func (a *acker) make(seq uint64, h record.Digest) ack {
	return ack{seq: seq, hash: h, mac: a.sum(seq, h)}
}

// check reports whether k's MAC is the one a makes.
func (a *acker) check(k *ack) bool {
	want := a.sum(k.seq, k.hash)
	return hmac.Equal(want[:], k.mac[:])
}

// appendAck appends k as a stored line, newline included.
func appendAck(dst []byte, k *ack) []byte {
	dst = append(dst, `{"ack":`...)
	dst = strconv.AppendUint(dst, k.seq, 10)
	dst = append(dst, `,"hash":"`...)
	dst = record.AppendHex(dst, &k.hash)
	dst = append(dst, `","mac":"`...)
	d := record.Digest(k.mac)
	dst = record.AppendHex(dst, &d)
	return append(dst, "\"}\n"...)
}

var ackPrefix = []byte(`{"ack":`)

// decodeAck reads a stored ack line (without its newline).
func decodeAck(line []byte) (k ack, err error) {
	f := record.NewFields(line)
	f.Literal(`{"ack":`)
	k.seq = f.Uint(record.MaxSeq)
	if f.Err() == nil && k.seq == 0 {
		f.Fail("ack 0: sequence numbers start at 1")
	}
	f.Literal(`,"hash":"`)
	k.hash = f.Digest()
	f.Literal(`","mac":"`)
	k.mac = [sha256.Size]byte(f.Digest())
	f.Literal(`"}`)
	if f.Err() == nil && !f.AtEnd() {
		f.Fail("trailing bytes after the ack")
	}
	return k, f.Err()
}
