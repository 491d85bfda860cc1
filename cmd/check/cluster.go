package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/compose/sshnodes"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/words"
)

func failed(err error) error { return &exitError{harness.ExitFailed, err} }

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "The node image every container runs",
		Example: "  check image build            # make fencecheck/node:<hash>; a run builds it when missing"}
	var verbose, all bool
	var clients []string
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the node images fencecheck/node:core-<hash> and fencecheck/node:<hash> locally (no registry needed)",
		Long: `image build makes the node images from Debian bookworm: where no registry
answers, the base comes from debootstrap and docker import. The core image,
fencecheck/node:core-<hash>, adds the tools every test needs and etcd 3.6 built
from the Go module proxy: an etcd run on the fenced storage needs nothing more.
The node image, fencecheck/node:<hash>, adds Debian's servers on top of it
(ZooKeeper, PostgreSQL, Redis, etcd 3.4). A run builds whichever it needs on
first use; this builds both. Each tag is a hash of the inputs, so a rebuild is
only needed when they change. One line per step; the tools' output goes to a
log file (--verbose streams it).

--all builds only what is missing, and also compiles now every server build and agent program a run compiles on
first use (etcd 3.5 and 3.7, kube-apiserver, the kubernetes backend's
check-kubernetes), into the cache where every later run finds them: CI calls
it so that no test waits for a compile, and each is paid once. The compiles
run from the start, beside the images: debootstrap and apt wait on the
network where a compile waits on the CPU.

--client BACKEND=DIR also builds the image of the --client program in DIR on
the node image a run of BACKEND uses, as that run would on first use (its
Debian packages, its build commands, its go_build compile); like --all, it
builds only the node images that are missing.
`,
		Example: "  check image build\n  check image build --all   # and every compile a run would make on first use\n" +
			"  check image build --client zookeeper=examples/clients/kazoo",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Every --client is checked before anything is built.
			plans := make([]harness.ClientImage, 0, len(clients))
			for _, c := range clients {
				backend, dir, ok := strings.Cut(c, "=")
				if !ok || backend == "" || dir == "" {
					return usageErr("--client %q: want BACKEND=DIR, the backend whose runs will use the client and the client's directory (e.g. --client zookeeper=examples/clients/kazoo)", c)
				}
				plan, err := harness.PlanClientImage(backend, dir)
				if err != nil {
					return usageErr("--client %s: %w", c, err)
				}
				plans = append(plans, plan)
			}
			return withBuild(cmd, verbose, func(ctx context.Context, cli *client.Client, out *images.BuildOutput) error {
				// --all makes sure of everything (builds what is missing):
				// scripts/test calls it before every test run, and a
				// forced rebuild of Debian's layer was seen to miss the
				// daemon's cache and cost minutes.
				build := images.BuildImage
				if all || len(plans) > 0 {
					build = images.EnsureImage
				}
				// The compiles need no image: they run from the start,
				// beside debootstrap and apt, which wait on the network.
				// The client images come after the node image they are
				// built on, beside the compiles still running.
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				compiled := make(chan error, 1)
				go func() {
					if !all {
						compiled <- nil
						return
					}
					compiled <- harness.CompileAll(ctx, cli, out)
				}()
				_, imageErr := build(ctx, cli, out)
				for i := 0; imageErr == nil && i < len(plans); i++ {
					if _, err := plans[i].Build(ctx, cli, out); err != nil {
						imageErr = fmt.Errorf("--client %s: %w", clients[i], err)
					}
				}
				if imageErr != nil {
					cancel() // the compiles' "context canceled" says nothing more
					<-compiled
					return failed(imageErr)
				}
				if err := <-compiled; err != nil {
					return failed(err)
				}
				return nil
			})
		},
	}
	build.Flags().BoolVar(&verbose, "verbose", false, "stream the full output of debootstrap, apt, go and docker (default: one line per step, the rest in a log file)")
	build.Flags().StringArrayVar(&clients, "client", nil, "also build the image of the --client program in DIR, on the node image BACKEND's runs use (BACKEND=DIR; repeatable)")
	build.Flags().BoolVar(&all, "all", false, "also compile every server build and agent program a run would compile on first use (etcd 3.5/3.7, the exact releases the tests run, the etcd failpoint build they run, kube-apiserver, check-kubernetes)")
	server := &cobra.Command{
		Use:   "server BACKEND [VERSION]",
		Short: "Build a shell-less server image in the official image's layout, for --server-image where no registry is at hand",
		Long: `image server builds a backend's server image on this machine, with no registry:
the server and the libraries it loads and nothing else (no shell, no tools), laid
out as the backend's official image (` + localImageBackends() + `). Where a
registry answers, pass the official image to --server-image instead
(docs/server-images.md).`,
		Example: localImageExamples(),
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			li, version, err := localServerImage(args)
			if err != nil {
				return err
			}
			return withBuild(cmd, verbose, func(ctx context.Context, cli *client.Client, out *images.BuildOutput) error {
				tag, err := li.Build(ctx, cli, version, out)
				if err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "built %s: run it with --backend %s --server-image %s\n", tag, args[0], tag)
				return nil
			})
		},
	}
	server.Flags().BoolVar(&verbose, "verbose", false, "stream the full output of the builds (default: one line per step, the rest in a log file)")
	cmd.AddCommand(build, server)
	return cmd
}

// withBuild runs f, a command that may build an image, with what each
// such command needs: a context an interrupt cancels (the daemon then
// removes the step's container and tags nothing), the Docker engine, and
// the build's output (closed when f returns).
func withBuild(cmd *cobra.Command, verbose bool, f func(context.Context, *client.Client, *images.BuildOutput) error) error {
	ctx, stop := interruptible(cmd.Context())
	defer stop()
	cli, err := engine.Connect(ctx)
	if err != nil {
		return failed(err)
	}
	out := buildOutput(cmd, verbose)
	defer out.Close()
	return f(ctx, cli, out)
}

// buildOutput prints an image build one line per step, the tools' output
// going to a log file, or (verbose) all of it as it comes.
func buildOutput(cmd *cobra.Command, verbose bool) *images.BuildOutput {
	return images.NewBuildOutput(cmd.OutOrStdout(), images.BuildOutputOptions{Verbose: verbose, LogDir: images.BuildLogDir()})
}

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Bring a test cluster up by hand, list or remove clusters",
		Example: `  check cluster up --id manual  # nodes n1..n3, storage, c1..c2, nothing started in them
  check cluster status          # what fencecheck tests left behind
  check cluster down            # remove every leftover`}
	var servers, clients int
	var id string
	up := &cobra.Command{
		Use:     "up",
		Short:   "Create the network and the nodes (n1..nN, storage, c1..cM); nothing is started in them",
		Example: "  check cluster up --nodes 3 --clients 2 --id manual\n  docker exec -it fc-manual-n1 bash",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// An interrupt stops it; Up removes what it had created.
			return withBuild(cmd, false, func(ctx context.Context, cli *client.Client, out *images.BuildOutput) error {
				image, err := images.EnsureImage(ctx, cli, out)
				if err != nil {
					return failed(err)
				}
				spec := engine.Spec{TestID: id, Image: image, Servers: servers, Storage: true, Clients: clients}
				if err := spec.Validate(); err != nil {
					return usageErr("%v", err)
				}
				c, err := engine.Up(ctx, cli, spec)
				if err != nil {
					return failed(err)
				}
				for _, n := range c.Containers {
					fmt.Fprintf(cmd.OutOrStdout(), "%-8s %-8s %-16s %s\n", n.Name, n.Role, n.IP, engine.ContainerName(id, n.Name))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "remove with: check cluster down --id %s\n", id)
				return nil
			})
		},
	}
	up.Flags().IntVar(&servers, "nodes", 3, "server nodes")
	up.Flags().IntVar(&clients, "clients", 2, "client nodes")
	up.Flags().StringVar(&id, "id", "manual", "the test id the objects are labelled with")

	var downID, downHosts string
	down := &cobra.Command{
		Use:     "down",
		Short:   "Remove every container, network and volume of fencecheck tests (or of one test)",
		Example: "  check cluster down            # every leftover\n  check cluster down --id manual\n  check cluster down --id etcd-231502.120 --hosts hosts.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			if downHosts != "" {
				return downOnHosts(ctx, cmd, downHosts, downID)
			}
			cli, err := engine.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			before, _ := engine.List(ctx, cli, downID)
			if err := engine.DownAll(ctx, cli, downID); err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", words.Plural(len(before), "object"))
			return nil
		},
	}
	down.Flags().StringVar(&downID, "id", "", "only this test's objects")
	down.Flags().StringVar(&downHosts, "hosts", "", "with --id, heal the hosts of this inventory file after a run on them (--hosts) that did not end: the test's processes killed, its iptables chain and directories removed")

	status := &cobra.Command{
		Use:     "status",
		Short:   "List the containers, networks and volumes fencecheck tests left behind",
		Example: "  check cluster status\n  check cluster down   # then remove them",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cli, err := engine.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			objs, err := engine.List(ctx, cli, "")
			if err != nil {
				return failed(err)
			}
			if len(objs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no fencecheck containers, networks or volumes")
			}
			for _, o := range objs {
				fmt.Fprintln(cmd.OutOrStdout(), o.String())
			}
			return nil
		},
	}
	cmd.AddCommand(up, down, status)
	return cmd
}

// localServerImage checks `image server`'s arguments against what the
// backend can build: refused before anything is built.
func localServerImage(args []string) (*registry.LocalServerImage, string, error) {
	b, ok := registry.Lookup(args[0])
	if !ok || b.LocalServerImage == nil {
		return nil, "", usageErr("image server: no local server image for %q (accepted: %s)", args[0], localImageBackends())
	}
	li := b.LocalServerImage
	switch {
	case len(li.Versions) == 0 && len(args) == 2:
		return nil, "", usageErr("image server %s: it builds one version, from the node image's package; drop %q", args[0], args[1])
	case len(li.Versions) > 0 && len(args) == 1:
		return nil, "", usageErr("image server %s: name the version (accepted: %s)", args[0], strings.Join(li.Versions, ", "))
	case len(li.Versions) > 0 && !slices.Contains(li.Versions, args[1]) && b.Releases == nil:
		return nil, "", usageErr("image server %s: no build %q (accepted: %s)", args[0], args[1], strings.Join(li.Versions, ", "))
	case len(li.Versions) > 0 && !slices.Contains(li.Versions, args[1]):
		// An exact release (etcd 3.5.4): one the backend takes, and
		// one the proxy serves, asked before anything is built.
		if err := b.Releases.Check(args[1]); err != nil {
			return nil, "", usageErr("image server %s: no build %q (accepted: %s, or %s): %v", args[0], args[1], strings.Join(li.Versions, ", "), b.Releases.What, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		notServed, err := b.Releases.Served(ctx, args[1])
		switch {
		case notServed != "":
			return nil, "", usageErr("image server %s: %s (accepted: %s, or %s)", args[0], notServed, strings.Join(li.Versions, ", "), b.Releases.What)
		case err != nil:
			return nil, "", fmt.Errorf("image server %s %s: %w", args[0], args[1], err)
		}
	}
	version := ""
	if len(args) == 2 {
		version = args[1]
	}
	return li, version, nil
}

// localImageBackends lists the backends `image server` builds for, with
// their versions.
func localImageBackends() string {
	var out []string
	for _, b := range registry.All() {
		if li := b.LocalServerImage; li != nil {
			if len(li.Versions) > 0 {
				out = append(out, b.Name+" "+strings.Join(li.Versions, "|"))
			} else {
				out = append(out, b.Name)
			}
		}
	}
	return strings.Join(out, ", ")
}

func localImageExamples() string {
	var out []string
	for _, b := range registry.All() {
		if li := b.LocalServerImage; li != nil {
			v := ""
			if len(li.Versions) > 0 {
				v = " " + li.Versions[len(li.Versions)/2]
			}
			out = append(out, "  check image server "+b.Name+v)
		}
	}
	return strings.Join(out, "\n")
}

// downOnHosts heals the hosts of the inventory file after test id
// (sshnodes.DownByID): a run on hosts whose harness never came back.
func downOnHosts(ctx context.Context, cmd *cobra.Command, file, id string) error {
	if id == "" {
		return usageErr("--hosts needs --id: the test whose hosts to heal (its check.log names it; every host's /run/fencecheck/ holds one directory per test)")
	}
	inv, err := sshnodes.Load(file)
	if err != nil {
		return usageErr("--hosts: %v", err)
	}
	if err := sshnodes.DownByID(ctx, inv, id); err != nil {
		return failed(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "healed %s after test %s\n", words.Plural(len(inv.Hosts), "host"), id)
	return nil
}
