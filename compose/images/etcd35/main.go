// Command etcd35 is etcd 3.5 built from its Go module, compiled on the
// host only when a run asks for --server-version 3.5 and copied into
// the server nodes. It only hands its arguments to etcd's own entry point
// and must never grow flags or behaviour of its own.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
