package images

import (
	"fmt"
)

// etcdServerModule is etcd's server module from 3.5 on (3.4 was
// go.etcd.io/etcd, with no server/v3/etcdmain).
const etcdServerModule = "go.etcd.io/etcd/server/v3"

// etcdReleaseMain is the one wrapper command every exact etcd release is
// compiled from: it only hands its arguments to etcd's own entry point
// (etcdmain.Main, the same call etcd's own main makes) and must never
// grow flags or behaviour of its own.
const etcdReleaseMain = `// Command etcd is one exact etcd release built from its Go module by
// fencecheck, which writes this file for every release it compiles.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
`

// EtcdReleasesAccepted says which exact etcd releases --server-version
// takes, for help and errors.
const EtcdReleasesAccepted = "an exact etcd release from 3.5.0 on (3.5.N, 3.6.N, 3.7.N, …) that the Go module proxy serves, e.g. 3.5.4"

// IsEtcdRelease says whether version names an exact release (3.5.4)
// rather than a series build (3.5).
func IsEtcdRelease(version string) bool {
	_, _, _, ok := ParseRelease(version)
	return ok
}

// EtcdRelease is the exact etcd release version ("3.5.4") as a Release:
// the server module at exactly that version behind etcdReleaseMain. It
// refuses what is not an exact release of 3.5 or later; whether the
// proxy serves it is Release.Served's question.
func EtcdRelease(version string) (Release, error) {
	major, minor, _, ok := ParseRelease(version)
	if !ok {
		return Release{}, fmt.Errorf("%q is not an exact etcd release (major.minor.patch)", version)
	}
	if major != 3 || minor < 5 {
		return Release{}, fmt.Errorf("etcd %s: fencecheck compiles etcd 3 from 3.5.0 on, whose server is the module %s (3.4 is Debian's package: --server-version 3.4)", version, etcdServerModule)
	}
	return Release{Name: "etcd", Module: etcdServerModule, Version: version, Pkg: ".", Main: etcdReleaseMain}, nil
}
