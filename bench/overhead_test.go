package main

import (
	"strings"
	"testing"
)

func TestOverheadBackends(t *testing.T) {
	got, err := overheadBackends("redis, redis:sentinel,etcd")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d targets, want 3: %+v", len(got), got)
	}
	if r := got[0]; r.name != "redis" || r.backend != "redis" || r.recipe != "" || r.options != nil {
		t.Errorf("redis alone: got %+v, want the backend with its defaults", r)
	}
	if s := got[1]; s.name != "redis:sentinel" || s.backend != "redis" || s.options["redis-topology"] != "sentinel" || s.recipe != "setnx" {
		t.Errorf("redis:sentinel: got %+v, want backend redis, --redis-topology sentinel, the deployment's first recipe (setnx)", s)
	}
	if e := got[2]; e.name != "etcd" || e.backend != "etcd" || e.options != nil {
		t.Errorf("etcd: got %+v", e)
	}
	if r, err := overheadBackends("redis:redlock"); err != nil || r[0].recipe != "redlock" {
		t.Errorf("redis:redlock: got %+v, %v; want recipe redlock, its deployment's only one", r, err)
	}
}

func TestOverheadBackendsRefused(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{"meteor", `"meteor" is not a backend that runs in Docker`},
		{"redis:cluster", `"redis:cluster": backend redis has no deployment "cluster" (accepted: redis:single, redis:redlock, redis:sentinel)`},
		{"redis:", `backend redis has no deployment ""`},
		{"etcd:sentinel", `"etcd:sentinel": backend etcd describes no deployments; give it as etcd`},
		{"meteor:sentinel", `"meteor" is not a backend that runs in Docker`},
		{"redis,,etcd", `"" is not a backend that runs in Docker`},
	} {
		_, err := overheadBackends(c.list)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %s", c.list, err, c.want)
		}
	}
}
