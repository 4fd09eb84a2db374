package chain

import "crypto/ed25519"

// A signer signs checkpoints with the chain's Ed25519 key, as RFC 8032
// does: the nonce is derived from the key and the message.
//
// Computing nonces ahead, while the log is idle, would take the scalar
// multiplication (about 60 µs of a proxied call's path on a busy 2-core VM)
// off the path of the call waiting for its checkpoint, and was tried. It was
// dropped because such a nonce cannot depend on the message: a process
// whose memory is cloned — a VM snapshot restored twice, a container
// checkpoint restored — holds the same ready nonces in both copies, each
// copy signs a different checkpoint with one of them, and the two
// signatures give away the key to anyone holding both chains, which are
// publishable. RFC 8032's nonce gives the same signature for the same
// message and a different nonce for a different one, whatever happens to
// the process.
type signer struct {
	priv ed25519.PrivateKey
	id   [8]byte // keyID of the public key
}

func newSigner(priv ed25519.PrivateKey) *signer {
	return &signer{priv: priv, id: keyID(priv.Public().(ed25519.PublicKey))}
}

// checkpoint signs (seq, h).
func (s *signer) checkpoint(seq uint64, h Digest) checkpoint {
	c := checkpoint{seq: seq, hash: h, key: s.id}
	copy(c.sig[:], ed25519.Sign(s.priv, checkpointMessage(seq, h)))
	return c
}
