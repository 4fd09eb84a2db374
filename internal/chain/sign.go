package chain

import (
	"crypto/ed25519"
	"crypto/fips140"
	"crypto/rand"
	"crypto/sha512"
	"sync"

	"filippo.io/edwards25519"
)

// A signer signs checkpoints with the chain's Ed25519 key, taking the
// slowest step of a signature off the path of the call that waits for it.
//
// An Ed25519 signature (RFC 8032) is R || S, where R = rB for a secret
// nonce r, and S = r + SHA-512(R || A || M)·s mod L. Computing R, a scalar
// multiplication of the base point, is most of the cost (about 60 µs of a
// proxied call's path on a busy 2-core VM, with its tables cold); the rest
// is one SHA-512 and a multiply-add. RFC 8032 derives r from the message,
// r = SHA-512(prefix || M), so R cannot be known before M. A signer instead
// computes nonces ahead, while the Log is idle: r = SHA-512(prefix || 32
// bytes from crypto/rand) mod L, and R = rB. The signature is the same
// equation and verifies with any Ed25519 verifier; only the choice of r
// differs, and the security of a Schnorr signature needs r secret, uniform
// and never used twice, which this gives: the secret prefix keeps r
// unpredictable even were the random bytes not, the random bytes make
// two nonces equal only by a 2^-256 chance, and each nonce is taken from
// the reserve, under the mutex, by one signature only (TestSignerConcurrent).
// TestSignerArithmetic holds the arithmetic to crypto/ed25519 byte for byte
// by feeding it RFC 8032's own nonce.
//
// With no nonce ready (the first checkpoint, a burst), or in FIPS 140-only
// mode, a signer signs with crypto/ed25519.
type signer struct {
	priv   ed25519.PrivateKey
	pub    [32]byte // A, the encoded public key
	id     [8]byte  // keyID(pub)
	s      edwards25519.Scalar
	prefix [32]byte // the second half of SHA-512(seed)
	fast   bool     // nonces may be computed ahead

	mu    sync.Mutex
	ready []nonce
}

// A nonce is a secret scalar r and its commitment R = rB, encoded.
type nonce struct {
	r edwards25519.Scalar
	R [32]byte
}

// nonceReserve is how many nonces a refill leaves ready: enough that a Log
// committing one call at a time wakes its writer to refill once every few
// calls, not on each.
const nonceReserve = 8

func newSigner(priv ed25519.PrivateKey) *signer {
	s := &signer{priv: priv, fast: !fips140.Enabled()}
	copy(s.pub[:], priv.Public().(ed25519.PublicKey))
	s.id = keyID(s.pub[:])
	h := sha512.Sum512(priv.Seed())
	if _, err := s.s.SetBytesWithClamping(h[:32]); err != nil {
		panic("chain: clamping an Ed25519 scalar: " + err.Error()) // 32 bytes never fail
	}
	copy(s.prefix[:], h[32:])
	return s
}

// checkpoint signs (seq, h).
func (s *signer) checkpoint(seq uint64, h Digest) checkpoint {
	return checkpoint{seq: seq, hash: h, key: s.id, sig: s.sign(checkpointMessage(seq, h))}
}

// sign signs msg with a nonce from the reserve, or with crypto/ed25519 when
// none is ready.
func (s *signer) sign(msg []byte) (sig [ed25519.SignatureSize]byte) {
	var nc nonce
	s.mu.Lock()
	n := len(s.ready)
	if n > 0 {
		nc = s.ready[n-1]
		s.ready[n-1] = nonce{}
		s.ready = s.ready[:n-1]
	}
	s.mu.Unlock()
	if n == 0 {
		copy(sig[:], ed25519.Sign(s.priv, msg))
		return sig
	}
	return s.finish(&nc, msg)
}

// finish completes the signature of msg with nonce nc: S = r + k·s, where
// k = SHA-512(R || A || msg) mod L.
func (s *signer) finish(nc *nonce, msg []byte) (sig [ed25519.SignatureSize]byte) {
	h := sha512.New()
	h.Write(nc.R[:])
	h.Write(s.pub[:])
	h.Write(msg)
	var d [sha512.Size]byte
	k, err := new(edwards25519.Scalar).SetUniformBytes(h.Sum(d[:0]))
	if err != nil {
		panic("chain: reducing a SHA-512 digest: " + err.Error()) // 64 bytes never fail
	}
	S := new(edwards25519.Scalar).MultiplyAdd(k, &s.s, &nc.r)
	copy(sig[:32], nc.R[:])
	copy(sig[32:], S.Bytes())
	return sig
}

// nonceFrom derives the nonce r = SHA-512(prefix || material) mod L and its
// R. With the message as material this is RFC 8032's nonce.
func (s *signer) nonceFrom(material []byte) nonce {
	h := sha512.New()
	h.Write(s.prefix[:])
	h.Write(material)
	var d [sha512.Size]byte
	var nc nonce
	if _, err := nc.r.SetUniformBytes(h.Sum(d[:0])); err != nil {
		panic("chain: reducing a SHA-512 digest: " + err.Error()) // 64 bytes never fail
	}
	copy(nc.R[:], new(edwards25519.Point).ScalarBaseMult(&nc.r).Bytes())
	return nc
}

// refill computes nonces until nonceReserve are ready, or until stop, if
// not nil, says to stop; about 60 µs each. It does nothing in FIPS 140-only
// mode.
func (s *signer) refill(stop func() bool) {
	if !s.fast {
		return
	}
	for s.reserve() < nonceReserve && (stop == nil || !stop()) {
		var material [32]byte
		rand.Read(material[:]) // never fails (crypto/rand since Go 1.24)
		nc := s.nonceFrom(material[:])
		s.mu.Lock()
		s.ready = append(s.ready, nc)
		s.mu.Unlock()
	}
}

// low reports whether the reserve has run down far enough to refill.
func (s *signer) low() bool { return s.fast && s.reserve() <= nonceReserve/2 }

// reserve returns how many nonces are ready.
func (s *signer) reserve() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ready)
}
