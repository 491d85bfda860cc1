package registry

import "context"

// Failpoints is how a backend describes its servers' failpoints: named
// places in the server's own code (before the raft log is saved, in the
// middle of a defragmentation) where a run can have the server panic or
// sleep, as etcd's robustness tests do with gofail. A run that arms one
// (Setup.Failpoints) gets the failpoint build; every other run keeps the
// plain one.
type Failpoints struct {
	// List names the failpoints of the build s asks for (its
	// ServerVersion), read without compiling it, so a run can refuse an
	// unknown name before anything is created. An error says why that
	// build has none (no failpoint build of that release), naming the
	// releases that have one.
	List func(ctx context.Context, s Setup) ([]string, error)
	// Port is where every server serves the failpoints' HTTP endpoint in
	// its node: PUT /NAME with an action arms one, DELETE /NAME disarms
	// it, GET / lists them (gofail's endpoint).
	Port int
	// What says what the failpoint build is, for --help and errors
	// ("etcd built with gofail enable over …").
	What string
	// Prepared are the builds fencecheck's own tests run with failpoints
	// (its Docker tests): `check image build --all` compiles their
	// failpoint builds up front, as it compiles Releases.Prepared.
	Prepared []string
}
