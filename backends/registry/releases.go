package registry

import "context"

// Releases says that a backend's --server-version also takes an exact
// release of its server (etcd 3.5.4, nats-server 2.10.22), compiled from
// the Go module proxy on first use and cached apart per release, beside
// its named builds (Info.Versions). A known bug lives in one release and
// its fix in the next, so a series build (the newest 3.5) cannot show it.
type Releases struct {
	// What says which releases are taken, for --help and errors ("an
	// exact etcd release from 3.5.0 on … that the Go module proxy
	// serves, e.g. 3.5.4").
	What string
	// Check says whether v names such a release: nil if so, else why
	// not. It asks nothing of the network: validation calls it for a v
	// that is none of Versions.
	Check func(v string) error
	// Served asks whether the Go module proxy serves the release v
	// (Check passed), before anything of a run is created: notServed is
	// the proxy's answer when it has no such release; err says the proxy
	// could not be asked. A release already compiled in the cache is
	// served without a question.
	Served func(ctx context.Context, v string) (notServed string, err error)
	// Prepared are the releases fencecheck's own tests run (its Docker
	// tests, the known bugs' table): `check image build --all` compiles
	// them up front with the named builds, so a fresh machine's tests
	// find them in the cache instead of compiling inside their time.
	Prepared []string
}
