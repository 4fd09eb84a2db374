package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
)

// API keys are the credentials of service accounts that cannot run an
// OAuth flow. aegis holds only their SHA-256: a leaked configuration
// does not leak keys, which is safe because a key is 128 random bits or
// more, so its hash cannot be reversed by guessing. A key MUST NOT
// contain a dot: a bearer credential with a dot is read as a JWT.

// NewAPIKey makes a key for a service account, "aegis_" and 32 random hex
// digits (128 bits), and the hash that goes in the configuration.
func NewAPIKey() (key, hash string) {
	var b [16]byte
	rand.Read(b[:])
	key = "aegis_" + hex.EncodeToString(b[:])
	return key, HashAPIKey(key)
}

// HashAPIKey is the hex SHA-256 of key, the form [APIKey].Hash holds.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// checkAPIKey finds the configured key whose hash is cred's. Every
// configured hash is compared, in constant time, so the time taken says
// neither which key matched nor how much of a hash did.
func (a *Authenticator) checkAPIKey(cred string) (*Identity, error) {
	if len(a.apiKeys) == 0 {
		return nil, fail(UnknownAPIKey, "no API keys are configured (a credential without a dot is read as an API key)")
	}
	sum := sha256.Sum256([]byte(cred))
	match := -1
	for i := range a.apiKeys {
		eq := subtle.ConstantTimeCompare(sum[:], a.apiKeys[i].hash[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return nil, fail(UnknownAPIKey, "the key matches no configured API key")
	}
	k := a.apiKeys[match]
	return &Identity{Principal: k.name, Roles: slices.Clone(k.roles), Method: MethodAPIKey}, nil
}
