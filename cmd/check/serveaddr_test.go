package main

import (
	"net"
	"strings"
	"testing"
)

// An --addr another program holds is bad input (254, naming the flag and
// the fix), not a failure of the tool.
func TestServeOnAnAddressInUseIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runCLI(t, "serve", "--addr", ln.Addr().String(), "--store", t.TempDir())
	if code != 254 || !strings.Contains(stderr, "--addr") || !strings.Contains(stderr, "already in use") {
		t.Errorf("exit %d, %q; want 254 naming --addr and that it is in use", code, stderr)
	}
}
