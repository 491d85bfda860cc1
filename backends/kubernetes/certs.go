package kubernetes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// secrets are what one cluster's API servers are started with and their
// clients trust, made fresh for each cluster and never written anywhere
// but the API server nodes and the clients' specs.
type secrets struct {
	// Token is the static bearer token of the one user, in group
	// system:masters: the same on every API server, so that a client is
	// the same user whichever it speaks to.
	Token string
	// Serving are the API servers' self-signed serving certificates and
	// keys, one per API server node, in the order the nodes were given:
	// each is its own CA, valid for its own node only, and the clients
	// trust exactly these (CABundle).
	Serving []servingCert
	// ServiceAccountKeyPEM signs and verifies service-account tokens,
	// which an API server will not start without; shared, so that every
	// API server accepts the tokens another signed.
	ServiceAccountKeyPEM []byte
}

// servingCert is one API server's certificate and key.
type servingCert struct {
	Node            string
	CertPEM, KeyPEM []byte
}

// CABundle is every API server's certificate, one PEM after another:
// what a client trusts, so it can speak to any of them (client-go's
// CAData and most TLS stacks take a bundle).
func (s *secrets) CABundle() []byte {
	var b []byte
	for _, c := range s.Serving {
		b = append(b, c.CertPEM...)
	}
	return b
}

// newSecrets makes a cluster's token and service-account key, and for
// each API server node (with its address, ips[i] for nodes[i]) a serving
// certificate valid for that node's name and address, and loopback, for
// a day.
func newSecrets(nodes, ips []string) (*secrets, error) {
	if len(nodes) == 0 || len(nodes) != len(ips) {
		return nil, errors.New("kubernetes: one address per API server node is needed for its certificate")
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	sec := &secrets{Token: hex.EncodeToString(tok)}
	for i, node := range nodes {
		cert, key, err := newServingCert(node, ips[i])
		if err != nil {
			return nil, err
		}
		sec.Serving = append(sec.Serving, servingCert{Node: node, CertPEM: cert, KeyPEM: key})
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(sa)
	if err != nil {
		return nil, err
	}
	sec.ServiceAccountKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER})
	return sec, nil
}

// newServingCert makes one API server's self-signed certificate and key,
// valid for node, ip and loopback.
func newServingCert(node, ip string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "fencecheck kube-apiserver " + node},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{node, "localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	if a := net.ParseIP(ip); a != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("making the API server's certificate (%s): %w", node, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
