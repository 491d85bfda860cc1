package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/lockclient"
)

// The spec starts from what init says of the service, the storage and the
// lease; the builtin field overlays it, and --spec replaces the builtin
// field.
func TestClientSpecFromInit(t *testing.T) {
	init := lockclient.Init{Service: lockclient.Service{Backend: "etcd", Endpoints: []string{"http://n1:2379"}},
		Storage: lockclient.Storage{URL: "http://storage:7001", Fencing: "all"}, LeaseTTLMs: 2500}
	spec, err := ClientSpec(init, "")
	if err != nil {
		t.Fatal(err)
	}
	want := backends.ClientSpec{Backend: "etcd", Endpoints: []string{"http://n1:2379"}, StorageURL: "http://storage:7001", Fencing: "all", LeaseTTL: 2500 * time.Millisecond}
	if spec.Backend != want.Backend || spec.Endpoints[0] != want.Endpoints[0] || spec.StorageURL != want.StorageURL || spec.Fencing != want.Fencing || spec.LeaseTTL != want.LeaseTTL {
		t.Errorf("from init alone: %+v, want %+v", spec, want)
	}

	init.Builtin = []byte(`{"backend":"kubernetes","recipe":"leaderelection","process":3,"service_secret":"s"}`)
	spec, err = ClientSpec(init, "")
	if err != nil || spec.Backend != "kubernetes" || spec.Recipe != "leaderelection" || spec.Process != 3 || spec.ServiceSecret != "s" || spec.StorageURL != "http://storage:7001" {
		t.Errorf("with builtin: %+v, %v", spec, err)
	}

	spec, err = ClientSpec(init, `{"backend":"memory","process":7}`)
	if err != nil || spec.Backend != "memory" || spec.Process != 7 || spec.Recipe != "" {
		t.Errorf("--spec must replace the builtin field: %+v, %v", spec, err)
	}

	if _, err := ClientSpec(init, `{"process":"x"}`); err == nil || !strings.Contains(err.Error(), "the built-in agent's spec") {
		t.Errorf("a bad spec's error does not say whose spec it is: %v", err)
	}
}

// SpecOpener hands the spec it read to the program's opener, and a bad
// spec never reaches it.
func TestSpecOpenerOpensTheSpec(t *testing.T) {
	var got backends.ClientSpec
	called := 0
	open := SpecOpener("", func(_ context.Context, spec backends.ClientSpec) (backends.Client, error) {
		called++
		got = spec
		return nil, nil
	})
	if _, err := open(context.Background(), lockclient.Init{Builtin: []byte(`{"backend":"redis","process":2}`)}); err != nil {
		t.Fatal(err)
	}
	if called != 1 || got.Backend != "redis" || got.Process != 2 {
		t.Errorf("opened %d times with %+v", called, got)
	}
	if _, err := SpecOpener("{", nil)(context.Background(), lockclient.Init{}); err == nil {
		t.Error("a spec that is not JSON was accepted")
	}
}
