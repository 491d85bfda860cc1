// Package images builds the Docker images a test's containers run, on the
// engine compose/engine connects to: the core and node images
// (fencecheck/node:core-<hash> and fencecheck/node:<hash>, image.go, from
// the Dockerfiles in node/ and servers/ and a Debian base made with
// debootstrap, base.go), a client's image (clientimage.go), the server
// images (fencecheck/etcd, fencecheck/redis, serverimages.go), and the
// servers compiled from the Go module proxy and kept in the user's cache:
// etcd from the wrapper modules etcd35, etcd36 and etcd37 (etcdbuilds.go),
// an exact release of etcd or nats-server from a go.mod written at build
// time (releases.go, etcdreleases.go) and kube-apiserver from the module
// kubeapiserver (kubeapiserver.go); and
// a backend's own agent program (check-kubernetes), compiled from this
// repository's source for one check binary (agentprogram.go). A
// build shows one line per step and keeps the tools' output in a log file
// (BuildOutput, steps.go) unless asked to stream it.
//
// Every build goes through the engine's API, so a remote engine builds as
// a local one does. It must never pull an image from a registry, start a
// container of a test or know of locks and faults: the images carry the
// servers, and the backends start them.
package images
