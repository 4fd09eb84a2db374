package chain

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aegis-mcp/aegis/internal/atomicfile"
)

// The key files of a chain directory.
const (
	// PrivateKeyFile holds the signing key: PKCS #8, PEM "PRIVATE KEY",
	// mode 0600. Anyone who can read it can sign checkpoints.
	PrivateKeyFile = "chain.key"
	// PublicKeyFile holds the verifying key: PKIX, PEM "PUBLIC KEY". Keep a
	// copy outside the directory: a verifier that takes the key from beside
	// the chain trusts whoever can write the directory.
	PublicKeyFile = "chain.pub"
)

// loadKey returns the signing key kept in keyDir for the chain in dir
// (keyDir is dir unless the chain shares another chain's key), creating it
// when keyDir holds no key and neither directory holds a chain. It holds
// keyDir's key lock meanwhile, so that writers opening chains that share
// one key at the same moment create it once. It refuses a key file others
// can read, a chain without its key, and a chain.pub of another key in
// either directory; a chain that shares a key gets a copy of chain.pub.
func loadKey(dir, keyDir string, haveSegments bool) (ed25519.PrivateKey, error) {
	if keyDir != dir {
		if err := os.MkdirAll(keyDir, 0o700); err != nil {
			return nil, fmt.Errorf("chain: %w", err)
		}
	}
	unlock, err := lockKey(keyDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	holder := ""
	if haveSegments {
		holder = dir
	}
	if keyDir != dir && holder == "" {
		segs, err := listSegments(keyDir)
		if err != nil {
			return nil, err
		}
		if len(segs) > 0 {
			holder = keyDir
		}
	}
	priv, err := loadOrCreateKey(keyDir, holder)
	if err != nil || keyDir == dir {
		return priv, err
	}
	if err := checkPublicCopy(dir, marshalPublicKey(priv.Public().(ed25519.PublicKey)), filepath.Join(keyDir, PrivateKeyFile)); err != nil {
		return nil, err
	}
	return priv, nil
}

// loadOrCreateKey returns the signing key in dir, creating it when dir
// holds no key and holder, the directory of a chain signed by it, is "".
func loadOrCreateKey(dir, holder string) (ed25519.PrivateKey, error) {
	keyPath := filepath.Join(dir, PrivateKeyFile)
	fi, err := os.Stat(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist) && holder != "":
		return nil, fmt.Errorf("chain: %s is missing but %s holds a chain: refusing to start a second key", keyPath, holder)
	case errors.Is(err, fs.ErrNotExist):
		return createKey(dir)
	case err != nil:
		return nil, fmt.Errorf("chain: reading signing key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("chain: %s has mode %#o: the signing key must be readable by its owner only (chmod 600)", keyPath, fi.Mode().Perm())
	}
	b, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("chain: reading signing key: %w", err)
	}
	priv, err := parsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("chain: %s: %w", keyPath, err)
	}
	if err := checkPublicCopy(dir, marshalPublicKey(priv.Public().(ed25519.PublicKey)), keyPath); err != nil {
		return nil, err
	}
	return priv, nil
}

// checkPublicCopy restores dir's chain.pub, the public half of the key in
// keyPath, if it is missing, and refuses one of another key.
func checkPublicCopy(dir string, pubPEM []byte, keyPath string) error {
	pubPath := filepath.Join(dir, PublicKeyFile)
	have, err := os.ReadFile(pubPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeFileSync(dir, PublicKeyFile, pubPEM, 0o644); err != nil {
			return fmt.Errorf("chain: restoring %s: %w", pubPath, err)
		}
	case err != nil:
		return fmt.Errorf("chain: reading public key: %w", err)
	case !bytes.Equal(have, pubPEM):
		return fmt.Errorf("chain: %s is not the public key of %s", pubPath, keyPath)
	}
	return nil
}

func createKey(dir string) (ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("chain: generating signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("chain: encoding signing key: %w", err)
	}
	// The public key goes first: a crash between the two leaves a chain.pub
	// without a key, which the next Open replaces, never a key without its
	// public half.
	if err := writeFileSync(dir, PublicKeyFile, marshalPublicKey(pub), 0o644); err != nil {
		return nil, fmt.Errorf("chain: writing public key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := writeFileSync(dir, PrivateKeyFile, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("chain: writing signing key: %w", err)
	}
	return priv, nil
}

// ParsePrivateKey parses a chain.key file: an Ed25519 key, PKCS #8 in a PEM
// block "PRIVATE KEY".
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) { return parsePrivateKey(b) }

func parsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	blk, rest := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New(`want one PEM "PRIVATE KEY" block`)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key is a %T, want ed25519", k)
	}
	return priv, nil
}

func marshalPublicKey(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err) // an ed25519.PublicKey always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads a verifying key in the form of chain.pub: one PEM
// "PUBLIC KEY" block holding a PKIX ed25519 key.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	blk, rest := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New(`chain: public key: want one PEM "PUBLIC KEY" block`)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("chain: public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("chain: public key is a %T, want ed25519", k)
	}
	return pub, nil
}

// MarshalPublicKey returns pub in the form of chain.pub.
func MarshalPublicKey(pub ed25519.PublicKey) []byte { return marshalPublicKey(pub) }

// writeFileSync writes name in dir atomically and durably.
func writeFileSync(dir, name string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(filepath.Join(dir, name), data, perm)
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
