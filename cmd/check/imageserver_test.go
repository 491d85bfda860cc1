package main

import (
	"strings"
	"testing"
)

// `image server etcd` takes a named build or an exact release the proxy
// serves; anything else exits 254 naming what is taken, before anything
// is built (here the proxy is an empty file:// one, so no release is
// served).
func TestImageServerTakesExactReleases(t *testing.T) {
	t.Setenv("GOPROXY", "file://"+t.TempDir())
	for args, want := range map[string]string{
		"etcd 3.4.23": "3.4 is Debian's package",
		"etcd 3.5.98": "does not serve etcd 3.5.98",
		"etcd 3.3":    "or an exact etcd release from 3.5.0 on",
	} {
		code, _, stderr := runCLI(t, append([]string{"image", "server"}, strings.Fields(args)...)...)
		if code != 254 || !strings.Contains(stderr, want) {
			t.Errorf("image server %s: exit %d, stderr %q; want 254 and %q", args, code, stderr, want)
		}
	}
	if _, v, err := localServerImage([]string{"etcd", "3.5"}); err != nil || v != "3.5" {
		t.Errorf("etcd 3.5: %q, %v", v, err)
	}
}
