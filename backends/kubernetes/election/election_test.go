package election_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/kubernetes"
	"github.com/fencecheck/fencecheck/backends/kubernetes/clientconf"
	"github.com/fencecheck/fencecheck/backends/kubernetes/election"
)

// client-go accepts the durations clientconf derives, down to the
// backend's MinTTL (RenewDeadline > 1.2 × RetryPeriod).
func TestTimingIsAcceptedByClientGo(t *testing.T) {
	for _, ttl := range []time.Duration{kubernetes.MinTTL, 2 * time.Second, 5 * time.Second, 10 * time.Minute} {
		tm := clientconf.TimingFor(ttl)
		_, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: clientconf.Namespace, Name: "x"},
				Client: fake.NewClientset().CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "p"}},
			LeaseDuration: tm.LeaseDuration, RenewDeadline: tm.RenewDeadline, RetryPeriod: tm.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
		})
		if err != nil {
			t.Errorf("--lease-ttl %s: client-go refuses %+v: %v", ttl, tm, err)
		}
	}
}

func TestLeaseNameIsAValidObjectName(t *testing.T) {
	for _, key := range []string{"k0", "K_1", "a/b", "x."} {
		name := clientconf.LeaseName(key)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("LeaseName(%q) = %q: %v", key, name, errs)
		}
	}
	if clientconf.LeaseName("a/b") == clientconf.LeaseName("a_b") {
		t.Errorf("two keys share a Lease")
	}
}

// A spec the client cannot work from is refused with what is missing,
// before anything is asked of an API server.
func TestOpenRefusesAnIncompleteSpec(t *testing.T) {
	secret := clientconf.Secret{Token: "t", CA: selfSigned(t)}.Encode()
	store := fenced.NewStore(fenced.All)
	spec := backends.ClientSpec{Backend: "kubernetes", Endpoints: []string{"https://n4:6443"}, ServiceSecret: secret, LeaseTTL: 2 * time.Second}
	for want, tc := range map[string]struct {
		spec    func(s backends.ClientSpec) backends.ClientSpec
		storage fenced.Storage
	}{
		"needs an API server's URL": {func(s backends.ClientSpec) backends.ClientSpec { s.Endpoints = nil; return s }, store},
		"service_secret":            {func(s backends.ClientSpec) backends.ClientSpec { s.ServiceSecret = ""; return s }, store},
		"shared storage":            {func(s backends.ClientSpec) backends.ClientSpec { return s }, nil},
	} {
		if _, err := election.Open(context.Background(), tc.spec(spec), tc.storage); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error saying %q, got %v", want, err)
		}
	}
	c, err := election.Open(context.Background(), spec, store)
	if err != nil {
		t.Fatalf("a complete spec: %v", err)
	}
	c.Close()
}

// selfSigned is a PEM certificate, as an API server's own.
func selfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "n4"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"n4"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
