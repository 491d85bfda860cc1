package registry

import (
	"context"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/backends"
)

// ByAddress is how a backend's lock service is tested when it is the
// user's own, already running and reached only by its endpoints
// (--endpoints): how an endpoint is written, and the questions a run puts
// to the servers by address. Every question goes over the service's own
// client protocol, from inside a client container (where the endpoints
// are reachable, on whatever network the user named): nothing here may
// need a server's host, start or stop a server, or write to the service
// beyond what the clients' locks write.
type ByAddress struct {
	// Form shows how one endpoint is written, for the errors
	// ("http://HOST:2379").
	Form string
	// Parse checks one endpoint as the backend's clients take it and
	// returns its host and port; its error says what is wrong with it.
	Parse func(endpoint string) (host, port string, err error)
	// VersionQuery says how Version asks, for the report.
	VersionQuery string
	// Version asks the server at one endpoint what it is.
	Version func(ctx context.Context, endpoint string) (backends.ServerVersion, error)
	// StateQuery says how State asks; State asks every endpoint what it
	// holds at the end of a run (backends.StateAsker's question, by
	// address). Nil when the backend cannot ask it by address: the run
	// then says it skipped the question.
	StateQuery string
	State      func(ctx context.Context, endpoints []string) (backends.ServiceState, error)
}

var byAddress = map[string]ByAddress{}

// RegisterByAddress says that backend's lock service can be tested by its
// endpoints alone; the backend's package calls it from init.
func RegisterByAddress(backend string, b ByAddress) {
	if b.Form == "" || b.Parse == nil || b.Version == nil {
		panic("registry: " + backend + ": a service tested by address needs a Form, a Parse and a Version")
	}
	byAddress[backend] = b
}

// LookupByAddress is how backend is tested by its endpoints, when it can
// be.
func LookupByAddress(backend string) (ByAddress, bool) {
	b, ok := byAddress[backend]
	return b, ok
}

// ByAddressNames lists the backends that can be tested by their
// endpoints, sorted.
func ByAddressNames() []string {
	var out []string
	for n := range byAddress {
		out = append(out, n)
	}
	sort.Strings(out)
	return slices.Clip(out)
}

// EndpointAnswer is one endpoint's answer to the version question, as
// `check ask-endpoints` prints it inside a client container and the
// harness reads it: the addresses the endpoint's host resolved to there
// (what a partition of the client drops), and the server's version.
type EndpointAnswer struct {
	Endpoint string   `json:"endpoint"`
	IPs      []string `json:"ips,omitempty"`
	Version  string   `json:"version,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	Error    string   `json:"error,omitempty"`
}
