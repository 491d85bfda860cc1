package engine_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// DOCKER_HOST=tcp:// with DOCKER_CERT_PATH and DOCKER_TLS_VERIFY: the
// client speaks TLS with the given certificates, verifies the engine's,
// and keeps the bound on the engine's answer (client.FromEnv alone would
// drop it). The engine here is an HTTPS server that answers _ping, and
// then one that never answers.
func TestTCPEngineWithTLSKeepsTheBound(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "cert", caCert, caKey)
	srvCert, srvKey := newCert(t, dir, "server", caCert, caKey)

	hang := make(chan struct{})
	var sawClientCert bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawClientCert = r.TLS != nil && len(r.TLS.PeerCertificates) > 0
		if strings.HasSuffix(r.URL.Path, "/hang/_ping") {
			<-hang
			return
		}
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool(caCert),
	}
	srv.StartTLS()
	defer srv.Close()
	defer close(hang) // before Close, which waits for the handlers
	addr := strings.TrimPrefix(srv.URL, "https://")

	t.Setenv("DOCKER_CERT_PATH", dir)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	t.Setenv(engine.TimeoutEnv, "2s")
	t.Setenv("DOCKER_HOST", "tcp://"+addr)
	cli, err := engine.Connect(context.Background())
	if err != nil {
		t.Fatalf("Connect over TLS: %v", err)
	}
	cli.Close()
	if !sawClientCert {
		t.Error("the engine saw no client certificate")
	}

	t.Setenv("DOCKER_HOST", "tcp://"+addr+"/hang")
	began := time.Now()
	cli, err = engine.Connect(context.Background())
	if err == nil {
		cli.Close()
		t.Fatal("Connect to an engine that never answers succeeded")
	}
	if took := time.Since(began); took > 8*time.Second {
		t.Errorf("took %s, want about the 2 s bound (twice: HEAD, then GET)", took)
	}
	if !strings.Contains(err.Error(), "did not answer in time") || !strings.Contains(err.Error(), addr) {
		t.Errorf("the message does not say the engine at %s did not answer: %v", addr, err)
	}

	t.Setenv("DOCKER_CERT_PATH", filepath.Join(dir, "missing"))
	if cli, err := engine.Connect(context.Background()); err == nil {
		cli.Close()
		t.Error("a DOCKER_CERT_PATH without certificates was accepted")
	} else if !strings.Contains(err.Error(), "DOCKER_CERT_PATH") {
		t.Errorf("the message does not name DOCKER_CERT_PATH: %v", err)
	}
}

// newCert writes name.pem (and key.pem for "cert", ca.pem for "ca") in
// dir: a CA when parent is nil, else a certificate for 127.0.0.1 signed
// by it.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "fencecheck-test-" + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	signer, signKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	switch name {
	case "ca":
		write("ca.pem", "CERTIFICATE", der)
	case "cert":
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		write("cert.pem", "CERTIFICATE", der)
		write("key.pem", "EC PRIVATE KEY", kb)
	}
	return cert, key
}

func pool(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// The real engine behind TLS: a TLS listener on 127.0.0.1 that demands a
// client certificate and carries each connection to this machine's
// engine. Through DOCKER_HOST=tcp:// with DOCKER_CERT_PATH and
// DOCKER_TLS_VERIFY, a node comes up, runs a command, streams stdin to a
// command and back (the hijacked connection is TLS too) and is removed.
func TestDockerTCPEngineWithTLS(t *testing.T) {
	local := dockertest.Engine(t, engine.Connect)
	tag := dockertest.NodeImage(t, local, images.EnsureImage)
	dir := t.TempDir()
	caCert, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "cert", caCert, caKey)
	srvCert, srvKey := newCert(t, dir, "server", caCert, caKey)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool(caCert),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				up, err := local.Dialer()(context.Background())
				if err != nil {
					return
				}
				defer up.Close()
				conns.Add(1)
				done := make(chan struct{})
				go func() {
					io.Copy(up, c)
					if cw, ok := up.(interface{ CloseWrite() error }); ok {
						cw.CloseWrite()
					}
					close(done)
				}()
				io.Copy(c, up)
				c.(*tls.Conn).CloseWrite()
				<-done
			}()
		}
	}()

	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	t.Setenv("DOCKER_CERT_PATH", dir)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	id := dockertest.TestID()
	t.Cleanup(func() { engine.DownAll(context.Background(), local, id) })
	c, err := engine.Up(ctx, cli, engine.Spec{TestID: id, Image: tag, Servers: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, "n1", []string{"sh", "-c", "echo hello from $(hostname)"})
	if err != nil || strings.TrimSpace(res.Stdout) != "hello from n1" {
		t.Errorf("exec over TLS: %+v, %v", res, err)
	}
	st, err := c.ExecStream(ctx, "n1", []string{"cat"})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(st.Stdin, "through TLS\n")
	st.Stdin.Close()
	got, _ := io.ReadAll(st.Stdout)
	st.Close()
	if string(got) != "through TLS\n" {
		t.Errorf("the stream carried %q", got)
	}
	if err := c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := engine.List(ctx, local, id); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if conns.Load() == 0 {
		t.Error("nothing went through the TLS listener")
	}
	t.Logf("%d connections through TLS", conns.Load())
}
