package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Leftover is one Docker object that carries the fencecheck labels.
type Leftover struct {
	Kind   string // "container", "network" or "volume"
	ID     string
	Name   string
	TestID string
	State  string // containers: running, paused, exited, ...
}

func (l Leftover) String() string {
	s := fmt.Sprintf("%s %s (test %s)", l.Kind, l.Name, l.TestID)
	if l.State != "" {
		s += " " + l.State
	}
	return s
}

// labelFilter selects fencecheck's objects: all of them when testID is "",
// else those of that test.
func labelFilter(testID string) filters.Args {
	if testID == "" {
		return filters.NewArgs(filters.Arg("label", LabelFencecheck+"=1"))
	}
	return filters.NewArgs(filters.Arg("label", LabelTest+"="+testID))
}

func networkListByName(name string) network.ListOptions {
	return network.ListOptions{Filters: filters.NewArgs(filters.Arg("name", name))}
}

// List returns the containers, networks and volumes of the given test, or of
// every test when testID is "", in that order.
func List(ctx context.Context, cli *client.Client, testID string) ([]Leftover, error) {
	f := labelFilter(testID)
	var out []Leftover
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, DaemonError(cli.DaemonHost(), err)
	}
	for _, c := range cs {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, Leftover{Kind: "container", ID: c.ID, Name: name, TestID: c.Labels[LabelTest], State: string(c.State)})
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, DaemonError(cli.DaemonHost(), err)
	}
	for _, n := range nets {
		out = append(out, Leftover{Kind: "network", ID: n.ID, Name: n.Name, TestID: n.Labels[LabelTest]})
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, DaemonError(cli.DaemonHost(), err)
	}
	for _, v := range vols.Volumes {
		out = append(out, Leftover{Kind: "volume", ID: v.Name, Name: v.Name, TestID: v.Labels[LabelTest]})
	}
	kind := map[string]int{"container": 0, "network": 1, "volume": 2}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return kind[out[i].Kind] < kind[out[j].Kind]
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// DownAll removes the containers, networks and volumes that crashed runs of
// the given test (of every test when testID is "") left behind.
func DownAll(ctx context.Context, cli *client.Client, testID string) error {
	return removeObjects(ctx, cli, testID, nil)
}

// removeObjects removes the given containers and every labelled container,
// network and volume of testID ("" for all tests). Missing objects are no
// error.
func removeObjects(ctx context.Context, cli *client.Client, testID string, containerIDs []string) error {
	f := labelFilter(testID)
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return DaemonError(cli.DaemonHost(), err)
	}
	// Image-run servers and filesystem layers first: each lives in
	// another container's namespace.
	attached := func(l map[string]string) bool { return l[LabelImageServer] == "1" || l[LabelFSLayer] == "1" }
	sort.SliceStable(cs, func(i, j int) bool { return attached(cs[i].Labels) && !attached(cs[j].Labels) })
	seen := map[string]bool{}
	var errs []error
	for _, c := range cs {
		seen[c.ID] = true
		errs = append(errs, removeContainer(ctx, cli, c.ID))
	}
	for _, id := range containerIDs {
		if id != "" && !seen[id] {
			errs = append(errs, removeContainer(ctx, cli, id))
		}
	}

	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return DaemonError(cli.DaemonHost(), err)
	}
	for _, n := range nets {
		errs = append(errs, removeNetwork(ctx, cli, n.ID, n.Name))
	}

	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return DaemonError(cli.DaemonHost(), err)
	}
	for _, v := range vols.Volumes {
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// removeContainer force-removes a container with its anonymous volumes,
// resuming it first if it is paused.
//
// A daemon that does not answer about the container is not asked again:
// the removal would wait as long, and the error names the container.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	began := time.Now()
	info, err := cli.ContainerInspect(ctx, id)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if noAnswer(err) {
		return fmt.Errorf("removing container %s: %w", shortID(id), askError(cli.DaemonHost(), "the inspection of container "+shortID(id), began, err))
	}
	if err == nil && info.State != nil && info.State.Paused {
		cli.ContainerUnpause(ctx, id)
	}
	began = time.Now()
	err = cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		if strings.Contains(err.Error(), "already in progress") {
			return nil
		}
		return fmt.Errorf("removing container %s: %w", shortID(id), askError(cli.DaemonHost(), "the removal of container "+shortID(id), began, err))
	}
	return nil
}

// removeNetwork removes a network, retrying for a few seconds while the
// daemon still detaches endpoints of just-removed containers.
func removeNetwork(ctx context.Context, cli *client.Client, id, name string) error {
	var err error
	for i := 0; i < 20; i++ {
		err = cli.NetworkRemove(ctx, id)
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("removing network %s: %w", name, err)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
