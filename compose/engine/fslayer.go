package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// A server node under a power fault has its lock service's data
// directory on a filesystem layer (nemesis/lossyfs) served by a process
// that must not live in the node's container: a `docker pause` freezes
// the container's cgroup, and a server task waiting on a FUSE request
// cannot be frozen until the daemon answers it — so a daemon frozen
// first would leave the freeze unfinished forever (cgroup v1's FREEZING;
// under cgroup v2 the same wait). The layer therefore runs in a container
// of its own, fc-<test>-<node>-fs:
//
//   - from the node image, in the node's PID namespace (PidMode
//     container:<node>), so /proc/1 is the node's init;
//   - with CAP_SYS_ADMIN, CAP_SYS_PTRACE and /dev/fuse (to mount(2) FUSE
//     itself and to enter the node's mount namespace), no more: engines that run inside a
//     sandbox refuse --privileged ("unable to apply caps");
//   - its command enters the node's mount namespace (nsenter --target 1
//     --mount) before it execs the layer, so the mount is made where the
//     node's servers see it, while the daemon's cgroup stays the layer
//     container's, which no fault ever freezes.
//
// The node container itself gets no new capability or device. When the
// node container goes, its PID namespace goes with it and so does the
// layer's process; removal takes the layer container first anyway.

// LabelFSLayer marks a node's filesystem layer container: "1". Its
// LabelNode is the node whose mount namespace it serves.
const LabelFSLayer = "fencecheck.fs-layer"

// FSLayerName is the container name of a node's filesystem layer,
// fc-<test id>-<node>-fs.
func FSLayerName(testID, node string) string { return ContainerName(testID, node) + "-fs" }

// FSLayerConfig is the configuration of node's filesystem layer
// container, running cmd in the node's mount namespace. image is the
// node image (with the check binary).
func FSLayerConfig(testID, node, nodeContainerID, image string, cmd []string) (*container.Config, *container.HostConfig) {
	labels := Labels(testID)
	labels[LabelNode] = node
	labels[LabelFSLayer] = "1"
	init := false
	return &container.Config{
			Image:      image,
			Labels:     labels,
			Entrypoint: []string{"nsenter", "--target", "1", "--mount", "--"},
			Cmd:        cmd,
		}, &container.HostConfig{
			PidMode:     container.PidMode("container:" + nodeContainerID),
			NetworkMode: "none",
			// SYS_PTRACE: opening /proc/1/ns/mnt is a ptrace access,
			// refused while the node's init holds a capability this
			// container lacks (NET_ADMIN).
			CapAdd: []string{"SYS_ADMIN", "SYS_PTRACE"},
			Resources: container.Resources{Devices: []container.DeviceMapping{
				{PathOnHost: "/dev/fuse", PathInContainer: "/dev/fuse", CgroupPermissions: "rwm"}}},
			Init: &init,
		}
}

// StartFSLayer starts node's filesystem layer: cmd, run in the node's
// mount namespace from a container of its own (see above). It returns
// once the container runs; ready, an exec in the node that exits 0 once
// the layer serves, is then polled until timeout, and a layer that does
// not come up is an error carrying its output.
func (c *Cluster) StartFSLayer(ctx context.Context, node string, cmd, ready []string, timeout time.Duration) error {
	n, err := c.container(node)
	if err != nil {
		return err
	}
	info, err := c.cli.ContainerInspect(ctx, n.ContainerID)
	if err != nil {
		return fmt.Errorf("inspecting %s: %w", node, DaemonError(c.cli.DaemonHost(), err))
	}
	cfg, hc := FSLayerConfig(c.TestID, node, n.ContainerID, info.Config.Image, cmd)
	resp, err := c.cli.ContainerCreate(ctx, cfg, hc, nil, nil, FSLayerName(c.TestID, node))
	if err != nil {
		return fmt.Errorf("creating %s's filesystem layer: %w", node, DaemonError(c.cli.DaemonHost(), err))
	}
	if err := c.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting %s's filesystem layer: %w", node, DaemonError(c.cli.DaemonHost(), err))
	}
	deadline := time.Now().Add(timeout)
	for {
		res, err := c.Exec(ctx, node, ready)
		if err == nil && res.ExitCode == 0 {
			return nil
		}
		st, ierr := c.cli.ContainerInspect(ctx, resp.ID)
		exited := ierr == nil && st.State != nil && !st.State.Running
		if exited || time.Now().After(deadline) || ctx.Err() != nil {
			why := "did not come up within " + timeout.String()
			if exited {
				why = fmt.Sprintf("exited with code %d", st.State.ExitCode)
			}
			return fmt.Errorf("%s's filesystem layer %s; its output:\n%s", node, why, c.fsLayerLogs(context.WithoutCancel(ctx), resp.ID))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *Cluster) fsLayerLogs(ctx context.Context, id string) string {
	rc, err := c.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if err != nil {
		return "(unavailable: " + err.Error() + ")"
	}
	defer rc.Close()
	var buf bytes.Buffer
	stdcopy.StdCopy(&buf, &buf, rc)
	return strings.TrimSpace(buf.String())
}
