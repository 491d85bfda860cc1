package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/compose"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/words"
)

func failed(err error) error { return &exitError{harness.ExitFailed, err} }

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "The node image every container runs",
		Example: "  check image build            # make fencecheck/node:<hash>; a run builds it when missing"}
	build := &cobra.Command{
		Use:   "build",
		Short: "Build fencecheck/node:<hash> locally (no registry needed), printing progress",
		Long: `image build makes the node image from Debian bookworm: where no registry answers,
the base comes from debootstrap and docker import; then the servers (etcd,
ZooKeeper, PostgreSQL, Redis) are installed from Debian's packages and etcd 3.6
is built from the Go module proxy. The tag is a hash of the inputs, so a rebuild
is only needed when they change.`,
		Example: "  check image build",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// An interrupt cancels the build: the daemon removes the
			// step's container and tags nothing.
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			cli, err := compose.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			start := time.Now()
			tag, err := compose.BuildImage(ctx, cli, cmd.OutOrStdout())
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s in %s\n", tag, time.Since(start).Round(time.Second))
			return nil
		},
	}
	etcd := &cobra.Command{
		Use:   "etcd VERSION",
		Short: "Build fencecheck/etcd:vVERSION, a shell-less etcd image in the official image's layout, for --server-image where no registry is at hand",
		Long: `image etcd builds fencecheck/etcd:vVERSION from the etcd fencecheck compiles from
the Go module proxy (` + strings.Join(compose.EtcdModuleVersions(), ", ") + `): the etcd binary alone, laid out as the official
etcd image (/usr/local/bin/etcd, working directory /var/lib/etcd, CMD etcd),
with no shell and no tools. Where a registry answers, pass the official image
instead (docs/server-images.md).`,
		Example: "  check image etcd 3.6\n  check --backend etcd --server-image fencecheck/etcd:v3.6 --nemesis pause-holder",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(compose.EtcdModuleVersions(), args[0]) {
				return usageErr("image etcd: no etcd build %q (accepted: %s)", args[0], strings.Join(compose.EtcdModuleVersions(), ", "))
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			cli, err := compose.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			tag, err := compose.BuildEtcdImage(ctx, cli, args[0], cmd.OutOrStdout())
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s: run it with --server-image %s\n", tag, tag)
			return nil
		},
	}
	redis := &cobra.Command{
		Use:   "redis",
		Short: "Build " + compose.RedisImageTag + ", a shell-less Redis image in the official image's layout, for --server-image where no registry is at hand",
		Long: `image redis builds ` + compose.RedisImageTag + ` from the node image's Debian redis-server: the
binary and the libraries it loads, laid out as the official redis image (redis-server
on PATH, working directory /data), with no shell and no tools. Where a registry
answers, pass the official image instead (docs/server-images.md).`,
		Example: "  check image redis\n  check --backend redis --recipe setnx-incr --server-image " + compose.RedisImageTag + " --nemesis kill",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			cli, err := compose.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			tag, err := compose.BuildRedisImage(ctx, cli, cmd.OutOrStdout())
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s: run it with --server-image %s\n", tag, tag)
			return nil
		},
	}
	cmd.AddCommand(build, etcd, redis)
	return cmd
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
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			cli, err := compose.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			image, err := compose.EnsureImage(ctx, cli, cmd.OutOrStdout())
			if err != nil {
				return failed(err)
			}
			spec := compose.Spec{TestID: id, Image: image, Servers: servers, Storage: true, Clients: clients}
			if err := spec.Validate(); err != nil {
				return usageErr("%v", err)
			}
			c, err := compose.Up(ctx, cli, spec)
			if err != nil {
				return failed(err)
			}
			for _, n := range c.Nodes {
				fmt.Fprintf(cmd.OutOrStdout(), "%-8s %-8s %-16s %s\n", n.Name, n.Role, n.IP, compose.ContainerName(id, n.Name))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "remove with: check cluster down --id %s\n", id)
			return nil
		},
	}
	up.Flags().IntVar(&servers, "nodes", 3, "server nodes")
	up.Flags().IntVar(&clients, "clients", 2, "client nodes")
	up.Flags().StringVar(&id, "id", "manual", "the test id the objects are labelled with")

	var downID string
	down := &cobra.Command{
		Use:     "down",
		Short:   "Remove every container, network and volume of fencecheck tests (or of one test)",
		Example: "  check cluster down            # every leftover\n  check cluster down --id manual",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			cli, err := compose.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			before, _ := compose.List(ctx, cli, downID)
			if err := compose.DownAll(ctx, cli, downID); err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", words.Plural(len(before), "object"))
			return nil
		},
	}
	down.Flags().StringVar(&downID, "id", "", "only this test's objects")

	status := &cobra.Command{
		Use:     "status",
		Short:   "List the containers, networks and volumes fencecheck tests left behind",
		Example: "  check cluster status\n  check cluster down   # then remove them",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cli, err := compose.Connect(ctx)
			if err != nil {
				return failed(err)
			}
			objs, err := compose.List(ctx, cli, "")
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
