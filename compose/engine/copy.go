package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// CopyTo writes content to dstPath (absolute) in the node with the given
// mode, owned by root. The directory must exist. It works on paused nodes.
func (c *Cluster) CopyTo(ctx context.Context, node, dstPath string, content []byte, mode int64) error {
	n, err := c.container(node)
	if err != nil {
		return err
	}
	if !path.IsAbs(dstPath) || strings.HasSuffix(dstPath, "/") {
		return fmt.Errorf("copy to %s: %q is not an absolute file path", node, dstPath)
	}
	dir, file := path.Split(path.Clean(dstPath))
	tarball, err := singleFileTar(file, content, mode)
	if err != nil {
		return err
	}
	if err := c.cli.CopyToContainer(ctx, n.ContainerID, dir, bytes.NewReader(tarball), container.CopyToContainerOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("copy to %s:%s: directory %s does not exist: %w", node, dstPath, dir, err)
		}
		return fmt.Errorf("copy to %s:%s: %w", node, dstPath, DaemonError(c.cli.DaemonHost(), err))
	}
	return nil
}

// Arch is the architecture of the Docker engine that runs the cluster
// (amd64, arm64): what a binary copied into a node must be built for.
func (c *Cluster) Arch(ctx context.Context) (string, error) {
	ver, err := c.cli.ServerVersion(ctx)
	if err != nil {
		return "", DaemonError(c.cli.DaemonHost(), err)
	}
	return ver.Arch, nil
}

// CopyFrom reads the regular file at srcPath in the node. A missing file
// gives an error for which errors.Is(err, fs.ErrNotExist) holds.
func (c *Cluster) CopyFrom(ctx context.Context, node, srcPath string) ([]byte, error) {
	n, err := c.container(node)
	if err != nil {
		return nil, err
	}
	rc, _, err := c.cli.CopyFromContainer(ctx, n.ContainerID, srcPath)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("copy from %s:%s: %w", node, srcPath, os.ErrNotExist)
		}
		return nil, fmt.Errorf("copy from %s:%s: %w", node, srcPath, DaemonError(c.cli.DaemonHost(), err))
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("copy from %s:%s: %w", node, srcPath, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("copy from %s:%s: not a regular file", node, srcPath)
	}
	return io.ReadAll(tr)
}

// Logs returns what the node's main process printed (stdout and stderr,
// interleaved as they were demultiplexed). The servers, started by exec,
// write their own logs to files: see CollectLogs.
func (c *Cluster) Logs(ctx context.Context, node string) ([]byte, error) {
	n, err := c.container(node)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	rc, err := c.cli.ContainerLogs(ctx, n.ContainerID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", node, askError(c.cli.DaemonHost(), "the request for the logs of "+node, began, err))
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return buf.Bytes(), fmt.Errorf("logs of %s: %w", node, err)
	}
	return buf.Bytes(), nil
}

// CollectLogs saves, for every node, its container log as
// dir/<node>/container.log and the files or directories named in paths
// under dir/<node>/<path>. paths maps a node name to paths in that node;
// the key "" names paths wanted from every node. Paths that do not exist
// are skipped. It goes on after errors and returns them all.
func (c *Cluster) CollectLogs(ctx context.Context, dir string, paths map[string][]string) error {
	return c.CollectLogsExcept(ctx, dir, paths, nil)
}

// CollectLogsExcept is CollectLogs for every node but those in skip (nodes
// the daemon does not answer about: asking again would only wait as long).
func (c *Cluster) CollectLogsExcept(ctx context.Context, dir string, paths map[string][]string, skip map[string]bool) error {
	var errs []error
	for _, n := range c.Containers {
		if skip[n.Name] {
			continue
		}
		nodeDir := filepath.Join(dir, n.Name)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		if logs, err := c.Logs(ctx, n.Name); err != nil {
			errs = append(errs, err)
		} else if err := os.WriteFile(filepath.Join(nodeDir, "container.log"), logs, 0o644); err != nil {
			errs = append(errs, err)
		}
		if n.ServerContainer != "" {
			if logs, err := c.ImageServerLogs(ctx, n.Name, ""); err != nil {
				errs = append(errs, err)
			} else if err := os.WriteFile(filepath.Join(nodeDir, "server-container.log"), logs, 0o644); err != nil {
				errs = append(errs, err)
			}
		}
		want := append(append([]string(nil), paths[""]...), paths[n.Name]...)
		sort.Strings(want)
		for i, p := range want {
			if i > 0 && p == want[i-1] {
				continue
			}
			if err := c.copyTree(ctx, n, p, nodeDir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// copyTree copies the file or directory srcPath of the node into
// dst/<srcPath>. Only regular files and directories are written.
func (c *Cluster) copyTree(ctx context.Context, n *Container, srcPath, dst string) error {
	if !path.IsAbs(srcPath) {
		return fmt.Errorf("collect from %s: %q is not an absolute path", n.Name, srcPath)
	}
	rc, _, err := c.cli.CopyFromContainer(ctx, n.ContainerID, srcPath)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("collect %s:%s: %w", n.Name, srcPath, err)
	}
	defer rc.Close()
	// The archive's entries are named from the base name of srcPath on.
	parent := filepath.Join(dst, filepath.FromSlash(path.Dir(path.Clean(srcPath))))
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("collect %s:%s: %w", n.Name, srcPath, err)
		}
		name := path.Clean("/" + hdr.Name) // no way out of parent
		target := filepath.Join(parent, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("collect %s:%s: %w", n.Name, srcPath, err)
			}
		}
	}
}
