// Command check-kubernetes is the kubernetes backend's agent program: the
// `check agent` of a run whose lock service is Kubernetes. It runs one
// client process in a client container, driven by the harness over the
// exec stream in the client protocol of docs/client-protocol.md, exactly
// as `check agent` does (harness/agent.Serve, the spec from the init
// line's builtin field or --spec, the storage and the lease check opened
// by registry.OpenClientWith); its client is client-go's leader election
// (backends/kubernetes/election).
//
// It is a program of its own so that the check binary does not link
// client-go (two fifths of its packages, a third of its size and most of
// its cold build). The harness gets it for the engine's architecture
// (compose/images.AgentProgramBinary: the user's cache, a copy beside the
// check binary, or compiled on first use) and puts it beside the check
// binary in the agent image. It must never do anything but serve the
// agent protocol: no flags of a run, no cluster, no reports.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/kubernetes/election"
	// The shared storages the clients write to: the fenced node is
	// registry's own, a PostgreSQL row is registered by its backend.
	_ "github.com/fencecheck/fencecheck/backends/postgres"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness/agent"
)

// The exit codes of check's (harness.ExitUsage and ExitFailed; a test
// keeps them equal): a bad command line, and an agent that could not
// serve.
const (
	exitUsage  = 254
	exitFailed = 255
)

const usageText = `usage: check-kubernetes agent [--spec JSON]

Runs one client process of the kubernetes backend (client-go's leader
election), driven by JSON lines on stdin and answering on stdout: the client
protocol of docs/client-protocol.md. The harness starts it in a client
container, as it starts ` + "`check agent`" + ` for the other backends. Its settings
come in the init line's "builtin" field (a backends.ClientSpec), or --spec;
that keeps the API server's token off the command line, where ps would show it.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "agent" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usageText)
			return 0
		}
		fmt.Fprintf(stderr, "check-kubernetes: the one command is agent\n%s", usageText)
		return exitUsage
	}
	fs := flag.NewFlagSet("check-kubernetes agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	specJSON := fs.String("spec", "", "the client's spec as JSON (backends.ClientSpec), in place of the init line's builtin field")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return 0
		}
		fmt.Fprintf(stderr, "check-kubernetes agent: %v\n%s", err, usageText)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "check-kubernetes agent: takes no arguments, got %q\n%s", fs.Args(), usageText)
		return exitUsage
	}
	if err := agent.Serve(stdin, stdout, agent.SpecOpener(*specJSON, open)); err != nil {
		fmt.Fprintf(stderr, "check-kubernetes: %v\n", err)
		return exitFailed
	}
	return 0
}

// open opens the client a spec describes: the kubernetes backend's, with
// its storage and lease check as `check agent` opens every other's.
func open(ctx context.Context, spec backends.ClientSpec) (backends.Client, error) {
	if spec.Backend != "kubernetes" {
		return nil, fmt.Errorf("check-kubernetes runs the kubernetes backend's clients only, and the spec is for backend %q (check agent runs the others)", spec.Backend)
	}
	return registry.OpenClientWith(ctx, spec, election.Open)
}
