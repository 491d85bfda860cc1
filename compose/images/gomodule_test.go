package images

import (
	"context"
	"strings"
	"testing"
)

// A module server's cached binary is named by everything that makes it:
// a changed go.sum, package, flags or platform never finds an old binary.
func TestModuleServerCacheName(t *testing.T) {
	m := ModuleServer{Name: "srv", Version: "1.2.3", Module: map[string]string{"go.mod": "module x\n", "go.sum": "a\n"}, Pkg: "example.org/srv"}
	base := m.cacheName("amd64")
	if !strings.HasPrefix(base, "srv-1.2.3-") || !strings.HasSuffix(base, "-linux-amd64") {
		t.Errorf("cache name %q", base)
	}
	if m.cacheName("") != base {
		t.Errorf("no architecture is amd64")
	}
	changed := []ModuleServer{m, m, m}
	changed[0].Module = map[string]string{"go.mod": "module x\n", "go.sum": "b\n"}
	changed[1].Pkg = "."
	changed[2].LdFlags = "-s"
	for i, c := range changed {
		if c.cacheName("amd64") == base {
			t.Errorf("change %d kept the cache name %s", i, base)
		}
	}
	if m.cacheName("arm64") == base {
		t.Errorf("arm64 shares amd64's cache name")
	}
}

func TestModuleServerNeedsItsParts(t *testing.T) {
	if _, err := (ModuleServer{Name: "srv"}).Binary(context.Background(), "amd64", nil); err == nil {
		t.Error("a module server without a module was built")
	}
}
