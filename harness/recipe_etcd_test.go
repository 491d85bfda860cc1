package harness

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/internal/usage"
)

func TestEtcdRecipes(t *testing.T) {
	for _, rc := range []string{"mutex", "lock-rpc"} {
		cfg := Config{Backend: "etcd", Recipe: rc, Fencing: "none", Nemesis: []string{"none"}, Clients: 5, Keys: 1, Nodes: 3,
			TimeLimit: 10e9, LeaseTTL: 2e9, NemesisInterval: 2e9, CheckTimeout: 60e9, Store: t.TempDir()}
		cfg, err := checked(cfg)
		if err != nil {
			t.Errorf("recipe %s: %v", rc, err)
		}
		if !strings.Contains(cfg.Name, rc) {
			t.Errorf("recipe %s: name %q does not say it", rc, cfg.Name)
		}
	}
	cfg := Config{Backend: "etcd", Recipe: "lock", Fencing: "none", Nemesis: []string{"none"}, Store: "x"}
	var ue *usage.Error
	if _, err := checked(cfg); !errors.As(err, &ue) || ue.Flag != "recipe" || !strings.Contains(ue.Msg, "lock-rpc") {
		t.Errorf("unknown recipe: %v, want a usage error naming --recipe and listing lock-rpc", err)
	}
	if _, err := etcd.NewRecipeClient([]string{"127.0.0.1:1"}, "lock", 2e9, nil); err == nil || !strings.Contains(err.Error(), "mutex, lock-rpc") {
		t.Errorf("etcd client with an unknown recipe: %v", err)
	}
}
