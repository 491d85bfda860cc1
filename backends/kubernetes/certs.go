package kubernetes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// secrets are what one cluster's API server is started with and its
// clients trust, made fresh for each cluster and never written anywhere
// but the API server's node and the clients' specs.
type secrets struct {
	// Token is the static bearer token of the one user, in group
	// system:masters.
	Token string
	// CertPEM and KeyPEM are the API server's self-signed serving
	// certificate (its own CA: the clients trust exactly it) and key.
	CertPEM, KeyPEM []byte
	// ServiceAccountKeyPEM signs and verifies service-account tokens,
	// which the API server will not start without.
	ServiceAccountKeyPEM []byte
}

// newSecrets makes a cluster's token, serving certificate (valid for the
// API server node's name and address, and loopback, for a day) and
// service-account key.
func newSecrets(node, ip string) (*secrets, error) {
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("making the API server's certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(sa)
	if err != nil {
		return nil, err
	}
	return &secrets{
		Token:                hex.EncodeToString(tok),
		CertPEM:              pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:               pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		ServiceAccountKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}),
	}, nil
}
