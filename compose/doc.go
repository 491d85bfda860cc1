// Package compose is fencecheck's Docker layer: it makes the images a
// test's containers run and brings up, drives and tears down those
// containers. It is a folder of three packages, one per job, and holds no
// code itself:
//
//   - compose/engine drives the Docker Engine: Connect, and one test's
//     cluster (a private bridge network with the servers n1..nN, an
//     optional "storage" node and the clients c1..cM): Up, Exec, Pause,
//     copies and logs, Down, and List and DownAll for what a crashed run
//     left behind;
//   - compose/images builds the images: the core and node images, a
//     client's image, the server images (etcd, redis), and the servers
//     compiled from the Go module proxy (the wrapper modules etcd35, etcd36
//     and etcd37, and kubeapiserver, under it), with a build's
//     one-line-per-step output;
//   - compose/sshtransport carries the engine's API over ssh, for an
//     ssh:// DOCKER_HOST.
//
// images uses engine (to ask the engine about an image, and for its error
// messages); engine uses sshtransport; nothing here uses images but the
// callers.
//
// The name is not the docker-compose tool, and fencecheck never runs it
// (nor the docker command line): it talks to the Docker Engine through
// the Go SDK only, so that an engine on another host serves as well as
// the local one, every object carries the labels of the test that made
// it, and every answer has a bound. docker-compose.yml here describes the
// cluster Up creates for a person who brings it up by hand with docker
// compose; engine's tests keep the two equal.
//
// Nothing here knows of locks or faults or starts a lock server, and
// nothing ever pulls an image from a registry.
package compose
