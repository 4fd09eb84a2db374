package chain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/aegis-mcp/aegis/internal/record"
)

// CheckpointDomain is the domain-separation prefix of a checkpoint
// signature. The signed message is
//
//	CheckpointDomain || seq as 8 bytes big-endian || the 32-byte entry hash
//
// so a checkpoint signature can never be mistaken for a signature of
// anything else the key signs.
const CheckpointDomain = "aegis.chain.checkpoint.v1\x00"

// A checkpoint is a signed statement that the entry numbered seq has hash.
// Through the hash links it covers every entry up to seq. A Log writes one
// after every group-commit batch, in the same write and fsync as the batch:
//
//	{"checkpoint":<seq>,"hash":"<64 hex>","key":"<16 hex>","sig":"<128 hex>"}
type checkpoint struct {
	seq  uint64
	hash record.Digest
	key  [8]byte
	sig  [ed25519.SignatureSize]byte
}

// checkpointMessage returns the bytes a checkpoint signature covers.
func checkpointMessage(seq uint64, h record.Digest) []byte {
	m := make([]byte, 0, len(CheckpointDomain)+8+32)
	m = append(m, CheckpointDomain...)
	m = binary.BigEndian.AppendUint64(m, seq)
	return append(m, h[:]...)
}

// keyID returns the key id of pub: the first 8 bytes of SHA-256(pub). It
// names the key; it is not what makes a checkpoint trusted.
func keyID(pub ed25519.PublicKey) (id [8]byte) {
	s := sha256.Sum256(pub)
	copy(id[:], s[:])
	return id
}

// KeyID returns the key id a checkpoint signed by pub carries, in hex.
func KeyID(pub ed25519.PublicKey) string {
	id := keyID(pub)
	return hex.EncodeToString(id[:])
}

// signCheckpoint signs (seq, h) with priv.
func signCheckpoint(priv ed25519.PrivateKey, seq uint64, h record.Digest) checkpoint {
	return signCheckpointAs(priv, keyID(priv.Public().(ed25519.PublicKey)), seq, h)
}

// signCheckpointAs signs (seq, h) with priv, whose key id is id, as RFC 8032
// does: the nonce is derived from the key and the message.
//
// Computing nonces ahead, while the log is idle, would take the scalar
// multiplication (about 60 µs on a busy 2-core VM) off the path of a call
// waiting for its checkpoint, and was tried when calls waited for one (ack
// lines took the signature off their path since: ack.go). It was
// dropped because such a nonce cannot depend on the message: a process
// whose memory is cloned — a VM snapshot restored twice, a container
// checkpoint restored — holds the same ready nonces in both copies, each
// copy signs a different checkpoint with one of them, and the two
// signatures give away the key to anyone holding both chains, which are
// publishable. RFC 8032's nonce gives the same signature for the same
// message and a different nonce for a different one, whatever happens to
// the process.
func signCheckpointAs(priv ed25519.PrivateKey, id [8]byte, seq uint64, h record.Digest) checkpoint {
	c := checkpoint{seq: seq, hash: h, key: id}
	copy(c.sig[:], ed25519.Sign(priv, checkpointMessage(seq, h)))
	return c
}

// verify reports whether c carries pub's key id and a valid signature by it.
func (c *checkpoint) verify(pub ed25519.PublicKey, id [8]byte) bool {
	return c.key == id && ed25519.Verify(pub, checkpointMessage(c.seq, c.hash), c.sig[:])
}

// appendCheckpoint appends c as a stored line, newline included.
func appendCheckpoint(dst []byte, c *checkpoint) []byte {
	dst = append(dst, `{"checkpoint":`...)
	dst = strconv.AppendUint(dst, c.seq, 10)
	dst = append(dst, `,"hash":"`...)
	dst = record.AppendHex(dst, &c.hash)
	dst = append(dst, `","key":"`...)
	dst = hex.AppendEncode(dst, c.key[:])
	dst = append(dst, `","sig":"`...)
	dst = hex.AppendEncode(dst, c.sig[:])
	return append(dst, "\"}\n"...)
}

// decodeCheckpoint reads a stored checkpoint line (without its newline).
func decodeCheckpoint(line []byte) (c checkpoint, err error) {
	f := record.NewFields(line)
	f.Literal(`{"checkpoint":`)
	c.seq = f.Uint(record.MaxSeq)
	if f.Err() == nil && c.seq == 0 {
		f.Fail("checkpoint 0: sequence numbers start at 1")
	}
	f.Literal(`,"hash":"`)
	c.hash = f.Digest()
	f.Literal(`","key":"`)
	f.Hex(c.key[:])
	f.Literal(`","sig":"`)
	f.Hex(c.sig[:])
	f.Literal(`"}`)
	if f.Err() == nil && !f.AtEnd() {
		f.Fail("trailing bytes after the checkpoint")
	}
	return c, f.Err()
}
