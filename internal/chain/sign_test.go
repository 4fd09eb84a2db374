package chain

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// TestCheckpointSignatureIsRFC8032: a checkpoint's signature is
// crypto/ed25519's for its message — deterministic, so signing the same
// checkpoint twice gives the same bytes — and carries the key's id.
func TestCheckpointSignatureIsRFC8032(t *testing.T) {
	pub, priv := testKey(t, 7)
	for _, seq := range []uint64{1, 2, record.MaxSeq} {
		h := digestOf("x")
		c := signCheckpointAs(priv, keyID(pub), seq, h)
		msg := checkpointMessage(seq, h)
		if !bytes.Equal(c.sig[:], ed25519.Sign(priv, msg)) || !ed25519.Verify(pub, msg, c.sig[:]) {
			t.Errorf("seq %d: signature %x is not RFC 8032's", seq, c.sig)
		}
		if again := signCheckpoint(priv, seq, h); again != c {
			t.Errorf("seq %d: two signatures of one checkpoint differ", seq)
		}
		if c.key != keyID(pub) || c.seq != seq || c.hash != h || !c.verify(pub, keyID(pub)) {
			t.Errorf("seq %d: checkpoint %+v", seq, c)
		}
	}
}
