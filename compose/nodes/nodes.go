// Package nodes is the one door through which the harness, the nemesis's
// faults and the backends reach the machines of a test: run a command,
// keep a process's streams open, copy a file, freeze and thaw a node,
// learn its address. A test's machines are containers on a Docker engine
// (compose/engine, the default and first implementation) or the user's
// own hosts over SSH (compose/sshnodes); whoever holds a Nodes cannot
// tell, and must not need to.
//
// What it is for: the contract between the code that decides what to do
// to a node (a backend starting etcd, a partition, a pause) and the code
// that knows how (the Docker Engine API, an SSH session). What it must
// never do: name a service, a backend or a fault; hold policy (timeouts
// belong to the caller's context); or grow a method only one driver can
// honour. What only containers can do lives in the optional interfaces
// below, which a caller asks for with a type assertion and refuses by
// name when they are missing.
package nodes

import (
	"context"
	"errors"
	"io"
	"path"
	"time"
)

// Roles of a node: the lock service's servers, the fenced storage, the
// clients' agents.
const (
	RoleServer  = "server"
	RoleStorage = "storage"
	RoleClient  = "client"
)

// StorageNode is the name of the storage node, in every history and log.
const StorageNode = "storage"

// BinaryPath is where every driver puts the check binary on every machine
// of a test: the agents, the probes, the delayer and the power layer all
// run from it.
const BinaryPath = "/usr/local/bin/check"

// ProgramPath is where a backend's own program named name lands on the
// machines: beside the check binary, on PATH.
func ProgramPath(name string) string { return path.Join(path.Dir(BinaryPath), name) }

// Node is one machine of a test as its users see it.
type Node struct {
	// Name is n1..nN, storage, c1..cM: what every history, log and fault
	// calls it, whatever the machine is really called.
	Name string
	// IP is the address its peers reach it at (on Docker, the test
	// network's; on hosts, the inventory's peer address).
	IP   string
	Role string // RoleServer, RoleStorage or RoleClient
}

// ExecResult is what a finished command printed and how it ended.
type ExecResult struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// ExecOptions tune a command run in a node. The zero value runs it as root
// in / with the node's environment.
type ExecOptions struct {
	User       string    // "postgres", "1000:1000"; "" for root
	Env        []string  // KEY=VALUE, added to the node's environment
	WorkDir    string    // "" for /
	Privileged bool      // every capability, where the driver can grant it
	Stdin      io.Reader // Exec and ExecWith only: fed to the command, then closed
}

// Stream is a command running in a node with its standard streams open.
// Stdout and Stderr buffer without bound, so a caller may read only one of
// them; closing Stdin ends the command's input.
type Stream struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	Stderr io.Reader

	// WaitFunc and CloseFunc are the driver's; callers use Wait and Close.
	WaitFunc  func() (int, error)
	CloseFunc func() error
}

// Wait waits for the command's output to end and returns its exit code.
func (s *Stream) Wait() (int, error) { return s.WaitFunc() }

// Close drops the connection to the command; its readers then see EOF.
// Whether the command itself ends is the driver's to say (Docker cannot
// kill an exec; an SSH session's command gets SIGHUP).
func (s *Stream) Close() error { return s.CloseFunc() }

// Nodes are the machines of one test.
type Nodes interface {
	// ID is the test's id: what labels everything the test started.
	ID() string
	// Node names one machine; an unknown name is an error naming it.
	Node(name string) (Node, error)
	// All lists the machines, servers first, then storage, then clients.
	All() []Node
	// Arch is the servers' architecture as Go spells it (amd64, arm64):
	// what a compiled server must be built for.
	Arch(ctx context.Context) (string, error)

	// Exec runs cmd in the node and waits for it. A command that fails is
	// no error: its exit code is in the result. Errors are the driver's
	// (the node is frozen, gone, unreachable).
	Exec(ctx context.Context, node string, cmd []string) (ExecResult, error)
	ExecWith(ctx context.Context, node string, cmd []string, opts ExecOptions) (ExecResult, error)
	// ExecPrivileged is Exec with every capability the driver can grant
	// (iptables, the freezer, mounts).
	ExecPrivileged(ctx context.Context, node string, cmd []string) (ExecResult, error)
	// ExecDetached starts cmd and returns once it runs, with an id the
	// driver can name it by; it is not waited for.
	ExecDetached(ctx context.Context, node string, cmd []string, opts ExecOptions) (string, error)
	// ExecStream starts cmd with its standard streams attached.
	ExecStream(ctx context.Context, node string, cmd []string) (*Stream, error)
	ExecStreamWith(ctx context.Context, node string, cmd []string, opts ExecOptions) (*Stream, error)

	// CopyTo writes content to dstPath in the node, mode as chmod's.
	CopyTo(ctx context.Context, node, dstPath string, content []byte, mode int64) error
	// CopyFrom reads one file from the node.
	CopyFrom(ctx context.Context, node, srcPath string) ([]byte, error)
	// Logs is what the node's own main process printed ("" where the
	// driver has no such thing).
	Logs(ctx context.Context, node string) ([]byte, error)
	// CollectLogsExcept copies each node's files named in paths (by node
	// name) under dir/<node>/, skipping the nodes in skip.
	CollectLogsExcept(ctx context.Context, dir string, paths map[string][]string, skip map[string]bool) error

	// Pause freezes every process of the node at once (the cgroup
	// freezer), Unpause thaws it, Paused says whether it is frozen.
	Pause(ctx context.Context, node string) error
	Unpause(ctx context.Context, node string) error
	Paused(ctx context.Context, node string) (bool, error)
	// HoldOffPause keeps Pause off the node until release is called (a
	// process half way through its start must not be frozen).
	HoldOffPause(node string) (release func())

	// SetServerEnv sets the environment the node's server is started
	// with from now on (the clock faults' libfaketime); ServerEnv reads it.
	SetServerEnv(node string, env []string)
	ServerEnv(node string) []string

	// Down removes or heals everything the test started on its machines.
	// It is idempotent.
	Down(ctx context.Context) error
}

// ImageServer is how a backend runs its server from the user's image
// (--server-image): the environment the image's entrypoint reads, and the
// command when the image's own CMD must be replaced (nil keeps it).
type ImageServer struct {
	Env []string
	Cmd []string
}

// ImageServers is a driver that can run a server node's lock server from
// an image of the user's, in a container of its own beside the node
// (--server-image; compose/engine's imageserver.go). Only containers can.
type ImageServers interface {
	// ServerImage is the image the servers run from, "" when they run on
	// the nodes themselves.
	ServerImage() string
	// StartImageServer starts node's server from the image (again, after
	// a kill, with its data); KillImageServer SIGKILLs it and returns
	// once it has stopped.
	StartImageServer(ctx context.Context, node string, s ImageServer) error
	KillImageServer(ctx context.Context, node string) error
	// ImageServerLogs is the server's output, its last tail lines ("all"
	// for every line); ImageServerState the driver's word for how it is
	// (running, exited with code 1...), and ImageServerName what the
	// driver calls it, for error messages.
	ImageServerLogs(ctx context.Context, node string, tail string) ([]byte, error)
	ImageServerState(ctx context.Context, node string) string
	ImageServerName(node string) string
}

// ServerImage is the image n's servers run from: "" when they run from
// none, as always on a driver that cannot (only Docker's can).
func ServerImage(n Nodes) string {
	if is, ok := n.(ImageServers); ok {
		return is.ServerImage()
	}
	return ""
}

// ImageServersOf is n as ImageServers, or an error saying that its driver
// cannot run servers from an image.
func ImageServersOf(n Nodes) (ImageServers, error) {
	if is, ok := n.(ImageServers); ok {
		return is, nil
	}
	return nil, errors.New("--server-image needs Docker nodes: this driver cannot run a server from an image")
}

// FSLayerer is a driver that can start the power layer (nemesis/lossyfs)
// over a node's data directory and keep it running beside the node, out
// of reach of the node's freezer. StartFSLayer runs cmd in the node's
// mount namespace, then polls ready (a command in the node that exits 0
// once the layer serves) until timeout; a layer that does not come up is
// an error carrying its output.
type FSLayerer interface {
	StartFSLayer(ctx context.Context, node string, cmd, ready []string, timeout time.Duration) error
}

// Bare is a driver whose machines carry nothing of the node image (the
// user's own hosts over SSH): no server fencecheck compiled, no Debian
// package it installed, and no name service that knows n1 or storage. A
// backend on it copies in every program its servers run, and names a
// peer by its address (PeerHost).
type Bare interface {
	// Bare says the machines are bare; its value is always true.
	Bare() bool
}

// IsBare reports whether n's machines are bare (see Bare).
func IsBare(n Nodes) bool {
	b, ok := n.(Bare)
	return ok && b.Bare()
}

// PeerHost is what one machine of n writes to reach the node name: the
// name itself where the driver's network resolves it (Docker's embedded
// DNS), the node's peer address where it does not (a bare driver). An
// unknown node is an error naming it.
func PeerHost(n Nodes, name string) (string, error) {
	if !IsBare(n) {
		return name, nil
	}
	node, err := n.Node(name)
	if err != nil {
		return "", err
	}
	if node.IP == "" {
		return "", errors.New("node " + name + " has no peer address")
	}
	return node.IP, nil
}

// Partitioner is a driver that cuts a node off from its peers itself, in
// a place of its own (hosts over SSH: an iptables chain of the test's
// own, whose first rule accepts the control machine, so that a partition
// never cuts fencecheck off from its hosts), instead of the partition
// fault's rules inside the node. DropFrom drops, on node, every packet
// from the peers named (node names); HealPartition undoes every DropFrom
// of node and is idempotent.
type Partitioner interface {
	DropFrom(ctx context.Context, node string, peers ...string) error
	HealPartition(ctx context.Context, node string) error
}
