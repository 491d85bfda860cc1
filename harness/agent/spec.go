package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/lockclient"
)

// ClientSpec is the built-in client's spec for the init line init: what
// init says of the service, the storage and the lease, overlaid with the
// spec the harness put in init's builtin field — or with specJSON, when
// not empty (an agent's --spec). Every agent program (`check agent`, and a
// backend's own, registry.Info.Agent) reads its spec through this one
// function, so they cannot come to read an init line differently.
func ClientSpec(init lockclient.Init, specJSON string) (backends.ClientSpec, error) {
	spec := backends.ClientSpec{Backend: init.Service.Backend, Endpoints: init.Service.Endpoints,
		StorageURL: init.Storage.URL, Fencing: init.Storage.Fencing,
		LeaseTTL: time.Duration(init.LeaseTTLMs) * time.Millisecond}
	raw := []byte(specJSON)
	if specJSON == "" {
		raw = init.Builtin
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &spec); err != nil {
			return spec, fmt.Errorf("the built-in agent's spec: %w", err)
		}
	}
	return spec, nil
}

// SpecOpener is the Opener of an agent program: it reads the client's
// spec from init (ClientSpec, with specJSON from --spec) and opens it with
// open (registry.OpenClient, or registry.OpenClientWith and the program's
// own client).
func SpecOpener(specJSON string, open func(ctx context.Context, spec backends.ClientSpec) (backends.Client, error)) Opener {
	return func(ctx context.Context, init lockclient.Init) (backends.Client, error) {
		spec, err := ClientSpec(init, specJSON)
		if err != nil {
			return nil, err
		}
		return open(ctx, spec)
	}
}
