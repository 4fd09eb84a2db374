package chain

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
)

// signTestKey returns the Ed25519 key whose seed is SHA-256(name).
func signTestKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(name))
	return ed25519.NewKeyFromSeed(seed[:])
}

// TestSignerArithmetic holds the signer's own arithmetic to crypto/ed25519:
// with the nonce RFC 8032 derives from the message (SHA-512(prefix || M)),
// finish must give exactly the bytes ed25519.Sign gives — so the only
// difference from RFC 8032 signing, once nonces come precomputed, is where
// the nonce comes from.
func TestSignerArithmetic(t *testing.T) {
	msgs := [][]byte{
		nil,
		{},
		{0},
		[]byte("aegis"),
		checkpointMessage(1, Digest{}),
		checkpointMessage(MaxSeq, Digest{0xff, 0xee}),
		bytes.Repeat([]byte{0xff}, 1000),
	}
	for k := range 8 {
		priv := signTestKey(fmt.Sprint("key", k))
		s := newSigner(priv)
		for i, m := range msgs {
			nc := s.nonceFrom(m)
			got := s.finish(&nc, m)
			if want := ed25519.Sign(priv, m); !bytes.Equal(got[:], want) {
				t.Errorf("key %d, message %d: finish with the RFC 8032 nonce\n got %x\nwant %x", k, i, got, want)
			}
		}
	}
}

// TestSignerPrecomputed: signatures made with nonces computed ahead verify
// under crypto/ed25519, no two share a nonce (R, their first half), and an
// empty reserve falls back to crypto/ed25519 itself.
func TestSignerPrecomputed(t *testing.T) {
	priv := signTestKey("precomputed")
	pub := priv.Public().(ed25519.PublicKey)
	s := newSigner(priv)
	if !s.fast {
		t.Skip("FIPS 140-only mode: the signer signs with crypto/ed25519 alone")
	}
	seen := map[[32]byte]bool{}
	for round := range 5 {
		s.refill(nil)
		if got := s.reserve(); got != nonceReserve {
			t.Fatalf("round %d: %d nonces ready after refill, want %d", round, got, nonceReserve)
		}
		for i := range nonceReserve {
			m := checkpointMessage(uint64(round*100+i), Digest{byte(i)})
			sig := s.sign(m)
			if !ed25519.Verify(pub, m, sig[:]) {
				t.Fatalf("round %d, %d: signature does not verify", round, i)
			}
			if bytes.Equal(sig[:], ed25519.Sign(priv, m)) {
				t.Errorf("round %d, %d: a precomputed nonce gave the deterministic signature", round, i)
			}
			var r [32]byte
			copy(r[:], sig[:32])
			if seen[r] {
				t.Fatalf("round %d, %d: nonce R %x used twice", round, i, r)
			}
			seen[r] = true
		}
		if got := s.reserve(); got != 0 {
			t.Fatalf("round %d: %d nonces left after %d signatures", round, got, nonceReserve)
		}
		calls := 0
		s.refill(func() bool { calls++; return calls > 3 })
		if got := s.reserve(); got != 3 {
			t.Fatalf("round %d: refill told to stop after 3 nonces left %d ready", round, got)
		}
		for range 3 {
			s.sign([]byte("drain"))
		}
		m := []byte("reserve empty")
		if sig := s.sign(m); !bytes.Equal(sig[:], ed25519.Sign(priv, m)) {
			t.Errorf("round %d: with no nonce ready, sign = %x; want crypto/ed25519's", round, sig)
		}
	}
}

// TestSignerConcurrent signs from many goroutines while others refill: every
// signature verifies and no nonce is used twice (run with -race).
func TestSignerConcurrent(t *testing.T) {
	priv := signTestKey("concurrent")
	pub := priv.Public().(ed25519.PublicKey)
	s := newSigner(priv)
	var mu sync.Mutex
	seen := map[[32]byte]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if i%5 == 0 {
					s.refill(nil)
				}
				m := checkpointMessage(uint64(g*1000+i), Digest{})
				sig := s.sign(m)
				if !ed25519.Verify(pub, m, sig[:]) {
					t.Errorf("goroutine %d, %d: signature does not verify", g, i)
					return
				}
				var r [32]byte
				copy(r[:], sig[:32])
				mu.Lock()
				dup := seen[r]
				seen[r] = true
				mu.Unlock()
				if dup {
					t.Errorf("goroutine %d, %d: nonce R %x used twice", g, i, r)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzSigner(f *testing.F) {
	f.Add([]byte("seed"), []byte("message"))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, seed, msg []byte) {
		priv := signTestKey(string(seed))
		s := newSigner(priv)
		nc := s.nonceFrom(msg)
		if got := s.finish(&nc, msg); !bytes.Equal(got[:], ed25519.Sign(priv, msg)) {
			t.Fatalf("finish with the RFC 8032 nonce differs from ed25519.Sign")
		}
		var material [32]byte
		rand.Read(material[:])
		nc = s.nonceFrom(material[:])
		if sig := s.finish(&nc, msg); !ed25519.Verify(priv.Public().(ed25519.PublicKey), msg, sig[:]) {
			t.Fatalf("a signature with a random nonce does not verify")
		}
	})
}
