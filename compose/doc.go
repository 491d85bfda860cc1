// Package compose builds the fencecheck node image and brings up, drives and
// tears down the containers of one test: a private bridge network with the
// servers n1..nN, an optional "storage" node and the clients c1..cM.
//
// An image build shows one line per step and keeps the tools' output in a
// log file (BuildOutput, steps.go) unless asked to stream it.
//
// It talks to the Docker Engine through the Go SDK only and never runs the
// docker command line here. The engine may be remote (Connect: ssh:// or
// tcp:// with TLS): everything, the image build included, goes through the
// API, and nothing may assume the engine is local — no socket path, no
// /var/lib/docker, no dialling a container's address. For ssh:// the
// connection itself is `ssh host docker system dial-stdio`, the docker
// command running on the remote host as the transport.
//
// It knows nothing of locks or faults and starts no server: the node images
// it builds carry the servers — the core image the ones compiled on the host
// (the etcd 3.6 wrapper, etcd36/), the node image Debian's on top of it
// (image.go) — but their containers run `sleep infinity`,
// and the backends start the servers in them with Exec. It must never pull an image from a registry, and
// every object it creates carries the labels fencecheck=1 and
// fencecheck.test=<test id> so that List and DownAll can find what a crashed
// run left behind.
package compose
