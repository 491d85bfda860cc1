package images

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		v                   string
		major, minor, patch int
		ok                  bool
	}{
		{"3.5.4", 3, 5, 4, true},
		{"2.10.22", 2, 10, 22, true},
		{"0.0.0", 0, 0, 0, true},
		{"3.5", 0, 0, 0, false},
		{"v3.5.4", 0, 0, 0, false},
		{"3.5.4-rc.0", 0, 0, 0, false},
		{"03.5.4", 0, 0, 0, false},
		{"3.5.4.1", 0, 0, 0, false},
		{"", 0, 0, 0, false},
		{"3.5.99999999999999999999", 0, 0, 0, false},
	} {
		major, minor, patch, ok := ParseRelease(tc.v)
		if ok != tc.ok || major != tc.major || minor != tc.minor || patch != tc.patch {
			t.Errorf("ParseRelease(%q) = %d, %d, %d, %t; want %d, %d, %d, %t", tc.v, major, minor, patch, ok, tc.major, tc.minor, tc.patch, tc.ok)
		}
	}
}

// Only an exact release of 3.5 or later is built from the proxy: 3.4 is
// another module (Debian's package here), and a series is a named build.
func TestEtcdRelease(t *testing.T) {
	for _, v := range []string{"3.5.2", "3.5.6", "3.6.0", "3.7.4", "3.9.0"} {
		r, err := EtcdRelease(v)
		if err != nil {
			t.Errorf("EtcdRelease(%s): %v", v, err)
			continue
		}
		if r.Module != "go.etcd.io/etcd/server/v3" || r.Version != v || r.Pkg != "." || !strings.Contains(r.Main, "etcdmain.Main(os.Args)") {
			t.Errorf("EtcdRelease(%s) = %+v", v, r)
		}
		if r.FileName() != EtcdBinaryName(v) {
			t.Errorf("%s: file name %s, the nodes' %s", v, r.FileName(), EtcdBinaryName(v))
		}
	}
	for v, want := range map[string]string{
		"3.4.23": "3.4 is Debian's package", "2.3.8": "from 3.5.0 on", "4.0.0": "from 3.5.0 on",
		"3.5": "not an exact etcd release", "v3.5.4": "not an exact etcd release",
	} {
		if _, err := EtcdRelease(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("EtcdRelease(%s): %v, want %q", v, err, want)
		}
	}
	if !IsEtcdRelease("3.5.4") || IsEtcdRelease("3.5") {
		t.Error("IsEtcdRelease tells a release from a series wrongly")
	}
}

// The generated module requires exactly the release and nothing else:
// go mod tidy completes it from the release's own go.mod. A command of
// the module itself is named by a tool directive.
func TestReleaseGoMod(t *testing.T) {
	r, _ := EtcdRelease("3.5.4")
	want := "module fencecheck.local/etcd-3_5_4\n\ngo " + releaseGoDirective + "\n\nrequire go.etcd.io/etcd/server/v3 v3.5.4\n"
	if got := r.goMod(); got != want {
		t.Errorf("etcd 3.5.4's go.mod:\n%s\nwant:\n%s", got, want)
	}
	n := Release{Name: "nats-server", Module: "github.com/nats-io/nats-server/v2", Version: "2.10.22", Pkg: "github.com/nats-io/nats-server/v2"}
	if got := n.goMod(); !strings.Contains(got, "\ntool github.com/nats-io/nats-server/v2\n") || !strings.Contains(got, "require github.com/nats-io/nats-server/v2 v2.10.22\n") {
		t.Errorf("nats-server 2.10.22's go.mod:\n%s", got)
	}
}

// Each release is cached apart: by release, wrapper, package and
// platform, and apart from the series build of the same line.
func TestReleaseCacheName(t *testing.T) {
	a, _ := EtcdRelease("3.5.4")
	b, _ := EtcdRelease("3.5.5")
	base := a.cacheName("amd64")
	if !strings.HasPrefix(base, "etcd-3.5.4-") || !strings.HasSuffix(base, "-linux-amd64") {
		t.Errorf("cache name %q", base)
	}
	changed := a
	changed.Main += "\n"
	for what, name := range map[string]string{"another release": b.cacheName("amd64"), "another wrapper": changed.cacheName("amd64"),
		"another platform": a.cacheName("arm64"), "the series build": etcdCachePath("3.5", "amd64")} {
		if strings.HasSuffix(name, base) {
			t.Errorf("%s shares the cache name %s", what, base)
		}
	}
	if a.cacheName("") != base {
		t.Error("no architecture is amd64")
	}
}

func TestReleaseNeedsItsParts(t *testing.T) {
	for _, r := range []Release{{Name: "etcd", Version: "3.5.4", Pkg: "."}, {Name: "etcd", Module: "m", Version: "3.5", Pkg: ".", Main: "package main"},
		{Name: "etcd", Module: "m", Version: "3.5.4", Pkg: "."}} {
		if _, err := r.Binary(context.Background(), "amd64", nil); err == nil {
			t.Errorf("%+v was built", r)
		}
		if err := r.Served(context.Background()); err == nil {
			t.Errorf("%+v was asked about", r)
		}
	}
}

// A release is fetched from a proxy, never cloned: GOPROXY's direct and
// off go, the proxies stay with the separators after them.
func TestProxyOnly(t *testing.T) {
	for in, want := range map[string]string{
		"https://proxy.golang.org,direct": "https://proxy.golang.org",
		"direct":                          "off",
		"off":                             "off",
		"":                                "off",
		"https://a.example|https://b.example,direct": "https://a.example|https://b.example",
		"direct,https://a.example":                   "https://a.example",
		"file:///tmp/p , https://proxy.golang.org":   "file:///tmp/p,https://proxy.golang.org",
		"https://a.example,off":                      "https://a.example",
	} {
		if got := proxyOnly(in); got != want {
			t.Errorf("proxyOnly(%q) = %q, want %q", in, got, want)
		}
	}
}

// A proxy without the version answers "not served": here a file:// proxy
// with nothing in it, asked by the real go command.
func TestReleaseNotServed(t *testing.T) {
	t.Setenv("GOPROXY", "file://"+t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, _ := EtcdRelease("3.5.97")
	err := r.Served(context.Background())
	var ns *NotServedError
	if !errors.As(err, &ns) || !strings.Contains(err.Error(), "does not serve etcd 3.5.97 (go.etcd.io/etcd/server/v3@v3.5.97)") {
		t.Fatalf("Served: %v, want not served", err)
	}
	notServed, err := r.ProxyAnswer(context.Background())
	if err != nil || notServed != ns.Error() {
		t.Errorf("ProxyAnswer: %q, %v", notServed, err)
	}
}

// The proxy serves an exact release its version list may omit, asked for
// by name (the module cache answers once it has asked).
func TestReleaseServedByTheProxy(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, _ := EtcdRelease("3.5.4")
	if err := r.Served(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A proxy that cannot be reached is not a proxy that said no: the error
// says the question failed, and nothing is remembered.
func TestReleaseProxyUnreachable(t *testing.T) {
	t.Setenv("GOPROXY", "http://127.0.0.1:1")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, _ := EtcdRelease("3.5.96")
	err := r.Served(context.Background())
	var ns *NotServedError
	if err == nil || errors.As(err, &ns) || !strings.Contains(err.Error(), "asking the Go module proxy (http://127.0.0.1:1) for go.etcd.io/etcd/server/v3@v3.5.96") {
		t.Fatalf("Served: %v, want a question that failed", err)
	}
	if _, remembered := served.Load(r.Module + "@v" + r.Version); remembered {
		t.Error("a failed question was remembered as an answer")
	}
}
