// Command etcd36 is etcd 3.6 built from its Go module, so the node image
// carries a newer etcd next to Debian's 3.4 without pulling any prebuilt
// binary. It only hands its arguments to etcd's own entry point and must
// never grow flags or behaviour of its own.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
