package harness

import (
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// noServerAccess is why whatever acts on the servers is refused with
// --endpoints.
const noServerAccess = "with --endpoints the servers are yours: fencecheck starts none and has no access to them"

// checkEndpoints refuses, before anything is created, what a run against
// the user's own servers (--endpoints) cannot do: a backend that cannot be
// tested by address, a list that names no endpoint or one the backend's
// clients cannot take, the flags that set up servers fencecheck starts
// (--nodes, --server-version, --server-image, --power-layer, a backend's
// own server settings), a storage kept in the service itself, and every
// fault that needs access to the servers. It trims the endpoints it keeps.
func (t *Test) checkEndpoints() error {
	c := &t.cfg
	if !c.Given["endpoints"] && len(c.Endpoints) == 0 {
		if c.EndpointsNetwork != "" || c.Given["endpoints-network"] {
			return usage.Errorf("endpoints-network", "joins the client containers to the Docker network where your lock service runs, and your service is given by --endpoints: add --endpoints (e.g. --endpoints http://etcd-1:2379 --endpoints-network %s), or drop the flag", orExample(c.EndpointsNetwork, "my-cluster_default"))
		}
		return nil
	}
	if !t.known {
		return nil // validateService names the unknown backend
	}
	b, ok := registry.LookupByAddress(c.Backend)
	if !ok {
		return usage.Errorf("endpoints", "backend %s cannot be tested by its endpoints yet: fencecheck runs its servers itself (accepted with --endpoints: --backend %s); drop --endpoints to test %s on servers fencecheck starts",
			c.Backend, registry.OrList(registry.ByAddressNames()), c.Backend)
	}
	eps, err := parseEndpoints(c.Endpoints, b)
	if err != nil {
		return err
	}
	c.Endpoints = eps
	if c.Cluster == registry.ClusterInProcess {
		return usage.Errorf("cluster", "with --endpoints the clients and the storage run in Docker containers that reach your servers: drop --cluster %s", c.Cluster)
	}
	for _, flag := range []string{"nodes", "server-version", "server-image", "power-layer"} {
		if c.Given[flag] {
			return usage.Errorf(flag, "sets up the servers fencecheck would start; %s (what they are is recorded from their own answer); drop --%s", noServerAccess, flag)
		}
	}
	for _, f := range registry.Flags() {
		if c.Options[f.Name] != "" || c.Given[f.Name] {
			return usage.Errorf(f.Name, "a setting of the servers fencecheck would start; %s, and they run with your settings; drop --%s", noServerAccess, f.Name)
		}
	}
	if !registry.IsSharedStorage(c.Storage) {
		return usage.Errorf("storage", "%s would keep the resource in your service itself, where an earlier run's values stay; with --endpoints the resource is fencecheck's own storage: --storage %s", c.Storage, registry.OrList(registry.SharedStorages()))
	}
	if err := nemesis.CheckByAddress(c.Nemesis); err != nil {
		return faultUsage(err)
	}
	if n := c.EndpointsNetwork; n != "" && (strings.TrimSpace(n) != n || strings.ContainsAny(n, " \t\n/")) {
		return usage.Errorf("endpoints-network", "%q is not a Docker network's name (e.g. my-cluster_default: docker network ls lists them)", n)
	}
	return nil
}

// parseEndpoints trims each endpoint and checks it as the backend's
// clients take it; an empty list, an empty entry, one the clients cannot
// take and a repeated one are refused.
func parseEndpoints(list []string, b registry.ByAddress) ([]string, error) {
	example := strings.ReplaceAll(b.Form, "HOST", "server-1") + "," + strings.ReplaceAll(b.Form, "HOST", "server-2")
	if len(list) == 0 {
		return nil, usage.Errorf("endpoints", "empty list: name your servers' client addresses, comma-separated (e.g. --endpoints %s)", example)
	}
	var out []string
	for _, e := range list {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return nil, usage.Errorf("endpoints", "an empty entry in %q: name each server once, comma-separated (e.g. --endpoints %s)", strings.Join(list, ","), example)
		case slices.Contains(out, e):
			return nil, usage.Errorf("endpoints", "%s is named twice: name each server once (e.g. --endpoints %s)", e, example)
		}
		if _, _, err := b.Parse(e); err != nil {
			return nil, usage.Errorf("endpoints", "%q: %v (each endpoint as %s, e.g. --endpoints %s)", e, err, b.Form, example)
		}
		out = append(out, e)
	}
	return out, nil
}

func orExample(v, example string) string {
	if v != "" {
		return v
	}
	return example
}
