// Package all links every backend into a binary: importing it for its side
// effects registers etcd, Kubernetes, memory, NATS, PostgreSQL (the backend and the shared
// storage), Redis and ZooKeeper with backends/registry. Binaries and tests
// that run tests import it; the harness itself never does, so it never
// names a backend. It must hold nothing but these imports.
package all

import (
	_ "github.com/fencecheck/fencecheck/backends/etcd"
	_ "github.com/fencecheck/fencecheck/backends/kubernetes"
	_ "github.com/fencecheck/fencecheck/backends/memory"
	_ "github.com/fencecheck/fencecheck/backends/nats"
	_ "github.com/fencecheck/fencecheck/backends/postgres"
	_ "github.com/fencecheck/fencecheck/backends/redis"
	_ "github.com/fencecheck/fencecheck/backends/zookeeper"
)
