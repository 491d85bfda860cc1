package harness

import (
	"strings"
	"testing"
	"time"
)

// --client is refused, naming why, where the program could not run.
func TestClientFlagRefusals(t *testing.T) {
	dir := "../examples/clients/redislock"
	base := func() Config {
		return Config{Backend: "redis", Cluster: "docker", Fencing: "none", Nemesis: []string{"none"}, Clients: 5, Keys: 1,
			TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, NemesisInterval: time.Second, CheckTimeout: time.Minute,
			Store: t.TempDir(), ClientDir: dir, Given: map[string]bool{}}
	}
	cases := map[string]struct {
		edit func(*Config)
		want string
	}{
		"memory":  {func(c *Config) { c.Backend, c.Cluster = "memory", "inprocess" }, "--client: the memory backend"},
		"recipe":  {func(c *Config) { c.Recipe = "redlock"; c.Given["recipe"] = true }, "--recipe: --recipe picks one of fencecheck's own"},
		"storage": {func(c *Config) { c.Storage = "postgres" }, "--storage: with --client the resource is the fenced storage node"},
		"missing": {func(c *Config) { c.ClientDir = "/nonexistent" }, "--client: /nonexistent: no such directory"},
	}
	for name, tc := range cases {
		cfg := base()
		tc.edit(&cfg)
		cfg.Defaults()
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	cfg := base()
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "redis-redislock-fenced-none-none" || cfg.Client().Manifest.Name != "redislock" {
		t.Errorf("name %s", cfg.Name)
	}
}
