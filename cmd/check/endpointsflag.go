package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/harness"
)

// addEndpointsFlags defines --endpoints and --endpoints-network: the
// user's own lock servers by address (docs/real-nodes.md, "Your cluster by
// its endpoints").
func addEndpointsFlags(f *pflag.FlagSet, cfg *harness.Config) {
	f.Var((*endpointsValue)(&cfg.Endpoints), "endpoints", "test your own lock service, already running, by its client addresses, comma-separated (etcd: http://etcd-1:2379,…; zookeeper: zk-1:2181,…): fencecheck starts no server and touches none, its storage and clients run in containers, and only the faults that need no access to the servers are accepted (none, pause, pause-holder, partition-client, partition-client-storage; docs/real-nodes.md)")
	f.StringVar(&cfg.Hosts, "hosts", "", "run the test on your own hosts over SSH, named in this inventory file (servers, storage, clients; docs/real-nodes.md): fencecheck installs the servers and its agents there instead of in containers; etcd so far, with the faults built over SSH (none, pause, pause-holder, pause-server, pause-leader, pause-all, kill, kill-leader, the partitions)")
	f.StringVar(&cfg.EndpointsNetwork, "endpoints-network", "", "with --endpoints, an existing Docker network the client containers also join, so that a service running in containers on this engine (a docker-compose cluster) is reached by its container names; without it they reach the endpoints as any container reaches an outside address")
}

// endpointsValue is --endpoints: a comma-separated list, kept as given
// (empty entries included, which the harness refuses by name), written
// back the same way for the rerun command.
type endpointsValue []string

func (v *endpointsValue) String() string { return strings.Join(*v, ",") }

func (v *endpointsValue) Set(s string) error {
	*v = append(*v, strings.Split(s, ",")...)
	if s == "" {
		*v = (*v)[:len(*v)-1]
	}
	return nil
}

func (v *endpointsValue) Type() string { return "urls" }
