package kubernetes

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The durations keep client-go's 15/10/2 proportions, and client-go
// accepts them down to MinTTL (RenewDeadline > 1.2 × RetryPeriod).
func TestTimingKeepsClientGoProportionsAndIsAccepted(t *testing.T) {
	if got := TimingFor(15 * time.Second); got != (Timing{15 * time.Second, 10 * time.Second, 2 * time.Second}) {
		t.Errorf("TimingFor(15s) = %+v, want client-go's defaults 15s/10s/2s", got)
	}
	for _, ttl := range []time.Duration{MinTTL, 2 * time.Second, 5 * time.Second, 10 * time.Minute} {
		tm := TimingFor(ttl)
		_, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "x"},
				Client: fake.NewClientset().CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "p"}},
			LeaseDuration: tm.LeaseDuration, RenewDeadline: tm.RenewDeadline, RetryPeriod: tm.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
		})
		if err != nil {
			t.Errorf("--lease-ttl %s: client-go refuses %+v: %v", ttl, tm, err)
		}
		if !strings.Contains(tm.String(), tm.RenewDeadline.String()) {
			t.Errorf("the report's line does not give RenewDeadline: %s", tm)
		}
	}
	if s := rateScale(TimingFor(15 * time.Second)); s != 1 {
		t.Errorf("at client-go's defaults the rate limit is client-go's: scale %v", s)
	}
}

func TestLeaseNameIsAValidObjectName(t *testing.T) {
	for _, key := range []string{"k0", "K_1", "a/b", "x."} {
		name := LeaseName(key)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("LeaseName(%q) = %q: %v", key, name, errs)
		}
	}
	if LeaseName("a/b") == LeaseName("a_b") {
		t.Errorf("two keys share a Lease")
	}
}

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
	a, err := newSecrets("n4", "172.20.0.5")
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSecrets("n4", "172.20.0.5")
	if err != nil {
		t.Fatal(err)
	}
	if a.Token == b.Token || string(a.CertPEM) == string(b.CertPEM) {
		t.Error("two clusters got the same token or certificate")
	}
	block, _ := pem.Decode(a.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
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
}

// A --client program is given the token and the certificate the API
// server was started with, and the report says the program, not
// fencecheck's 15/10/2 derivation, runs the election.
func TestClientProgramGetsTheServersTokenAndCertificate(t *testing.T) {
	d := NewDB("t1", 2*time.Second)
	if tok, ca := d.BearerAuth(); tok != "" || ca != "" {
		t.Errorf("before Setup: BearerAuth() = %q, %q; want nothing", tok, ca)
	}
	sec, err := newSecrets("n4", "10.0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	d.sec, d.Client = sec, "client-go"
	tok, ca := d.BearerAuth()
	if tok != sec.Token || ca != string(sec.CertPEM) {
		t.Errorf("BearerAuth() is not the server's token and certificate")
	}
	if b, _ := pem.Decode([]byte(ca)); b == nil || b.Type != "CERTIFICATE" {
		t.Errorf("the CA is not a PEM certificate: %.60q", ca)
	}
	if got := d.Info()["leader election"]; !strings.Contains(got, "client client-go") || strings.Contains(got, "RenewDeadline") {
		t.Errorf("a --client run's leader election line: %q", got)
	}
}
