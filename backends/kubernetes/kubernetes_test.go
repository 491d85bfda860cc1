package kubernetes

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/usage"
)

func TestParseVersionReadsGitVersion(t *testing.T) {
	v, err := parseVersion("n4", `{"major": "1", "minor": "34", "gitVersion": "v1.34.4", "gitTreeState": "clean"}`)
	if err != nil || v.Version != "kube-apiserver v1.34.4" {
		t.Errorf("got %+v, %v", v, err)
	}
	if _, err := parseVersion("n4", `Unauthorized`); err == nil {
		t.Error("a body that is not the version was accepted")
	}
}

func TestSecretsAreFreshAndCoverTheNode(t *testing.T) {
	a, err := newSecrets([]string{"n4"}, []string{"172.20.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSecrets([]string{"n4"}, []string{"172.20.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Token == b.Token || string(a.Serving[0].CertPEM) == string(b.Serving[0].CertPEM) {
		t.Error("two clusters got the same token or certificate")
	}
	cert := parseCert(t, a.Serving[0].CertPEM)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	for _, host := range []string{"n4", "172.20.0.5", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("a client that trusts only the cluster's certificate refuses %s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "n5"}); err == nil {
		t.Error("the certificate covers another node")
	}
	if string(a.CABundle()) != string(a.Serving[0].CertPEM) {
		t.Error("with one API server the clients trust other than its certificate")
	}
}

// Three API servers: each its own certificate, covering its own name and
// address and no other API server's; one token and one service-account
// key for all; and a client trusting the bundle accepts each of them.
func TestThreeAPIServersEachHaveTheirOwnCertificate(t *testing.T) {
	nodes, ips := []string{"n4", "n5", "n6"}, []string{"10.0.0.4", "10.0.0.5", "10.0.0.6"}
	sec, err := newSecrets(nodes, ips)
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Serving) != 3 {
		t.Fatalf("%d serving certificates for 3 API servers", len(sec.Serving))
	}
	bundle := x509.NewCertPool()
	if !bundle.AppendCertsFromPEM(sec.CABundle()) {
		t.Fatal("the CA bundle holds no certificate")
	}
	for i, s := range sec.Serving {
		if s.Node != nodes[i] {
			t.Errorf("certificate %d is for %s, not %s", i, s.Node, nodes[i])
		}
		cert := parseCert(t, s.CertPEM)
		for _, host := range []string{nodes[i], ips[i]} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: bundle, DNSName: host}); err != nil {
				t.Errorf("%s's certificate, checked against the bundle, refuses %s: %v", nodes[i], host, err)
			}
		}
		for j, other := range nodes {
			if j != i && cert.VerifyHostname(other) == nil {
				t.Errorf("%s's certificate covers %s", nodes[i], other)
			}
		}
	}
	if _, err := newSecrets(nodes, ips[:2]); err == nil {
		t.Error("an API server without an address got a certificate")
	}
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("not PEM: %.60q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// --apiservers takes 1 (the default, also when not given) or 3, and
// refuses anything else before a cluster exists, as a usage error naming
// the flag, the accepted values and an example; the server count follows.
func TestAPIServersFlag(t *testing.T) {
	for v, want := range map[string]int{"": 1, "1": 1, "3": 3} {
		n, err := ParseAPIServers(v)
		if err != nil || n != want {
			t.Errorf("--apiservers %q: %d, %v; want %d", v, n, err, want)
		}
		d, err := newDBFor("t1", 2*time.Second, map[string]string{APIServersFlag: v})
		if err != nil || d.Servers() != EtcdMembers+want {
			t.Errorf("--apiservers %q: %v, %v; want %d server nodes", v, d, err, EtcdMembers+want)
		}
	}
	for _, v := range []string{"0", "2", "5", "three", "-1", " 3"} {
		if err := CheckAPIServers(v); err == nil {
			t.Errorf("--apiservers %q accepted", v)
		}
		_, err := newDBFor("t1", 2*time.Second, map[string]string{APIServersFlag: v})
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != APIServersFlag {
			t.Fatalf("--apiservers %q: %v, not a usage error about the flag", v, err)
		}
		for _, want := range []string{"--apiservers", "1, 3", "e.g. --apiservers 3", strconv.Quote(v)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("--apiservers %q: %q does not say %q", v, err, want)
			}
		}
	}
}

// With three API servers the report says they share etcd and which one a
// client speaks to; with one it says nothing of the kind.
func TestAPIServersNote(t *testing.T) {
	if n := apiserversNote(1, ""); n != "" {
		t.Errorf("one API server got a note: %q", n)
	}
	for _, want := range []string{"3 kube-apiservers", "same etcd", "linearizable", "p mod 3"} {
		if n := apiserversNote(3, ""); !strings.Contains(n, want) {
			t.Errorf("note %q does not say %q", n, want)
		}
	}
	if n := apiserversNote(3, "client-go"); !strings.Contains(n, "service.endpoints") {
		t.Errorf("a --client run's note does not say the program gets every URL: %q", n)
	}
}

// A --client program is given the token and the certificate the API
// server was started with, and the report says the program, not
// fencecheck's 15/10/2 derivation, runs the election.
func TestClientProgramGetsTheServersTokenAndCertificate(t *testing.T) {
	d := NewDB("t1", 2*time.Second)
	if tok, ca := d.BearerAuth(); tok != "" || ca != "" {
		t.Errorf("before Setup: BearerAuth() = %q, %q; want nothing", tok, ca)
	}
	sec, err := newSecrets([]string{"n4"}, []string{"10.0.0.4"})
	if err != nil {
		t.Fatal(err)
	}
	d.sec, d.Client = sec, "client-go"
	tok, ca := d.BearerAuth()
	if tok != sec.Token || ca != string(sec.Serving[0].CertPEM) {
		t.Errorf("BearerAuth() is not the server's token and certificate")
	}
	if b, _ := pem.Decode([]byte(ca)); b == nil || b.Type != "CERTIFICATE" {
		t.Errorf("the CA is not a PEM certificate: %.60q", ca)
	}
	if got := d.Info()["leader election"]; !strings.Contains(got, "client client-go") || strings.Contains(got, "RenewDeadline") {
		t.Errorf("a --client run's leader election line: %q", got)
	}
}
