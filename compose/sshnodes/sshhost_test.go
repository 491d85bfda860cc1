package sshnodes

// The test hosts: containers on this machine, each running its own sshd
// (internal/dockertest/sshhosts, shared with harness's runs on hosts).

import (
	"testing"

	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/internal/dockertest/sshhosts"
)

// testHost is one host container to start.
type testHost = sshhosts.Host

// fixture is the hosts of one test.
type fixture struct {
	id      string
	cli     *client.Client
	inv     *Inventory
	gateway string            // the network's gateway: the control machine as the hosts see it
	ip      map[string]string // by node name
}

// startHosts starts one host container per entry of hosts on a network
// of the test's own, and returns their inventory, parsed from a file as
// a user's would be. Everything is removed when the test ends.
func startHosts(t *testing.T, hosts []testHost) *fixture {
	t.Helper()
	f := sshhosts.Start(t, hosts, sshhosts.Options{})
	inv, err := Load(f.File)
	if err != nil {
		t.Fatalf("the fixture's inventory: %v", err)
	}
	return &fixture{id: f.ID, cli: f.Cli, inv: inv, gateway: f.Gateway, ip: f.IP}
}
