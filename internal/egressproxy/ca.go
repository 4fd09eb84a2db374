package egressproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"time"
)

// caValidity is how long the ephemeral CA and its certificates are valid:
// the CA is made per proxy, so per `aegis run`, and its key never outlives
// New, so its validity bounds nothing a thief could use; it only has to
// outlast a long session of an MCP client. A run longer than this must be
// restarted for its https credentials to work.
const caValidity = 30 * 24 * time.Hour

// authority is the proxy's ephemeral certificate authority: a CA
// certificate, and a certificate for each https credential's host signed
// by it. The CA's key signs those certificates in [newAuthority] and is
// dropped there: it is never stored, written or returned, so nothing the
// proxy holds can issue a certificate for another host.
type authority struct {
	certPEM []byte                      // the CA's certificate, for the server to trust
	leaves  map[string]*tls.Certificate // by canonical host
}

// newAuthority makes a CA valid from now for caValidity, name-constrained
// to hosts (canonical names or addresses), and a certificate for each
// host, all ECDSA P-256.
//
// The constraints are for the server's TLS clients: the certificate it
// is told to trust vouches for these hosts only. A name constraint also
// admits the name's subdomains (RFC 5280 §4.2.1.10); no certificate is
// ever issued for one. With no address among hosts every address is
// excluded, and with no name every name is confined to "invalid", which
// no host is under: an absent constraint would allow everything of its
// type.
func newAuthority(hosts []string, now time.Time) (*authority, error) {
	if len(hosts) == 0 {
		return nil, errors.New("no host to issue a certificate for")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the CA's key: %w", err)
	}
	ca := caTemplate(hosts, now)
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("making the CA's certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("reading the CA's certificate: %w", err)
	}
	// One key for every host's certificate: the certificates differ in
	// their names only, and a key per host would protect nothing more.
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the hosts' key: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	a := &authority{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		leaves:  make(map[string]*tls.Certificate, len(hosts)),
	}
	for _, h := range hosts {
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: h},
			NotBefore:    ca.NotBefore,
			NotAfter:     ca.NotAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		if addr, err := netip.ParseAddr(h); err == nil {
			tmpl.IPAddresses = []net.IP{addr.AsSlice()}
		} else {
			tmpl.DNSNames = []string{h}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &leafKey.PublicKey, caKey)
		if err != nil {
			return nil, fmt.Errorf("making the certificate of %s: %w", h, err)
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("reading the certificate of %s: %w", h, err)
		}
		// What the server's client will check, checked first: a host the
		// constraints refuse fails New, not every handshake.
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: now}); err != nil {
			return nil, fmt.Errorf("the certificate of %s does not verify: %w", h, err)
		}
		a.leaves[h] = &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: leafKey, Leaf: leaf}
	}
	return a, nil
}

// caTemplate is the CA's certificate for hosts, valid from now, with its
// name constraints.
func caTemplate(hosts []string, now time.Time) *x509.Certificate {
	var names []string
	var ips []*net.IPNet
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil {
			ips = append(ips, &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())})
			continue
		}
		names = append(names, h)
	}
	ca := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "aegis egress proxy, ephemeral CA of one run"},
		NotBefore:                   now.Add(-time.Minute),
		NotAfter:                    now.Add(caValidity),
		KeyUsage:                    x509.KeyUsageCertSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         names,
		PermittedIPRanges:           ips,
	}
	if len(names) == 0 {
		ca.PermittedDNSDomains = []string{"invalid"}
	}
	if len(ips) == 0 {
		ca.ExcludedIPRanges = []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		}
	}
	return ca
}

// serial returns a random 128-bit serial number (RFC 5280 asks for at most
// 20 octets, positive).
func serial() *big.Int {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go 1.24 on)
	b[0] &= 0x7f
	b[0] |= 0x40 // no leading zero octet
	return new(big.Int).SetBytes(b)
}
