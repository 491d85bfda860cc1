// Package lockclient is the client protocol of docs/client-protocol.md
// (version 1) in Go: its messages, and Serve, which speaks it on stdin and
// stdout for a Client. A Go lock client implements Client (open, acquire,
// read, write with a failpoint hook, release) and calls Serve once; the
// harness's own agent (`check agent`) is one such client, and the harness
// reads the same messages on its side.
//
// It is also the one owner of the words an op ends in, for fencecheck as a
// whole: the rule that turns a client's error into ok, fail or info
// (Outcome, outcome.go), the error texts "fenced" and "lease-lost", the
// checkpoint "write-checked" and the monotonic clock answers are stamped
// on. The built-in clients (backends), the harness's agent and the
// history use them from here, because this package sits below all of
// them.
//
// It is for users' programs, so it depends on the standard library alone
// (and golang.org/x/sys for the monotonic clock). It never decides an op's
// outcome for the client: an error is info unless the client marks it
// Fail or returns ErrFenced. It never writes anything but protocol lines to
// its output; logs belong on stderr.
package lockclient

import "encoding/json"

// Version is the protocol version this package speaks.
const Version = 1

// MaxLine bounds a protocol line in both directions (64 KiB).
const MaxLine = 64 << 10

// Message types.
const (
	TypeInit       = "init"
	TypeReady      = "ready"
	TypeRefuse     = "refuse"
	TypeOK         = "ok"
	TypeFail       = "fail"
	TypeInfo       = "info"
	TypeCheckpoint = "checkpoint"
)

// Ops: the f of a request.
const (
	OpAcquire  = "acquire"
	OpRead     = "read"
	OpWrite    = "write"
	OpRelease  = "release"
	OpClock    = "clock"
	OpContinue = "continue"
	// OpReadLockFree reads the storage without the lock and without a
	// token (--read-mix). fencecheck sends it only to its own agent; a
	// client that is not a LockFreeReader answers it fail.
	OpReadLockFree = "read-lock-free"
)

// FailpointWriteChecked names the checkpoint a write reports after its
// last lease check and before it leaves for the storage.
const FailpointWriteChecked = "write-checked"

// The error texts of a fail that fencecheck itself reads, in answers and
// in the history (docs/history.md) alike.
const (
	// ErrorFenced: the storage refused the op for its token.
	ErrorFenced = "fenced"
	// ErrorLeaseLost: the client knew its lease was gone and never sent
	// the op.
	ErrorLeaseLost = "lease-lost"
)

// Init is the first line fencecheck sends.
type Init struct {
	Type       string   `json:"type"`
	Protocol   int      `json:"protocol"`
	Process    int      `json:"process"`
	Node       string   `json:"node"`
	Service    Service  `json:"service"`
	Storage    Storage  `json:"storage"`
	LeaseTTLMs int64    `json:"lease_ttl_ms"`
	Keys       []string `json:"keys"`
	// Builtin carries the built-in agent's own settings (its recipe);
	// fencecheck sends it only to its own agents (`check agent`, or a
	// backend's own agent program). Other clients ignore it.
	Builtin json.RawMessage `json:"builtin,omitempty"`
}

// Service is the lock service.
type Service struct {
	Backend   string   `json:"backend"`
	Endpoints []string `json:"endpoints"`
	Servers   []Server `json:"servers"`
	User      string   `json:"user,omitempty"`
	Password  string   `json:"password,omitempty"`
	// BearerToken and CA are for a service reached over HTTPS with a
	// token (Kubernetes' API server): the token to present as
	// "Authorization: Bearer", and the PEM certificate to trust, which is
	// the server's own self-signed one.
	BearerToken string `json:"bearer_token,omitempty"`
	CA          string `json:"ca,omitempty"`
}

// Server is one server of the lock service.
type Server struct {
	Node string `json:"node"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

// Storage is the resource the client writes to: the fenced storage node
// (Backend "fenced", spoken over HTTP), or a storage the client writes with
// its own fence check (Backend "postgres": a table; "etcd": keys under a
// prefix), where Fencing is FencingClient.
type Storage struct {
	Backend string `json:"backend,omitempty"`
	URL     string `json:"url,omitempty"`
	Fencing string `json:"fencing"`
	// Table is the PostgreSQL table (key, value, fence), User and
	// Password its credentials.
	Table    string `json:"table,omitempty"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	// Endpoints and Prefix are etcd's: the client keeps key k's value at
	// Prefix+k.
	Endpoints []string `json:"endpoints,omitempty"`
	Prefix    string   `json:"prefix,omitempty"`
}

// FencingClient is Storage.Fencing for a storage that checks nothing
// itself: the client's own check (its SQL, its transaction) is the fence.
const FencingClient = "client"

// Hello is the client's answer to init: ready, or refuse with a reason.
type Hello struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Error    string `json:"error,omitempty"`
}

// Request is one op, or the continue that lets a stopped write go on.
type Request struct {
	ID    uint64 `json:"id"`
	F     string `json:"f"`
	Key   string `json:"key,omitempty"`
	Token uint64 `json:"token,omitempty"`
	Prev  int64  `json:"prev,omitempty"`
	Value int64  `json:"value,omitempty"`
	// TimeoutMs is the op's deadline, counted from its arrival.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	// Stop asks a write to report the checkpoint and wait for continue.
	Stop bool `json:"stop,omitempty"`
}

// Answer is the client's answer to a request: ok, fail, info, or the
// checkpoint of a stopped write.
type Answer struct {
	ID    uint64 `json:"id"`
	Type  string `json:"type"`
	Token uint64 `json:"token,omitempty"`
	Value int64  `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	// Name is the checkpoint's name.
	Name string `json:"name,omitempty"`
	// Call and Return are CLOCK_MONOTONIC readings (ns) just before the op
	// left and just after its answer came back; optional.
	Call   int64 `json:"call,omitempty"`
	Return int64 `json:"return,omitempty"`
}

// Line is m as one protocol line, newline included.
func Line(m any) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic("lockclient: " + err.Error()) // the message types always marshal
	}
	return append(b, '\n')
}
