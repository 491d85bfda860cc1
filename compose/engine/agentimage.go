package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// The agent image: a node image with the check binary already at
// BinaryPath. A cluster's nodes all run the same binary, so instead of
// copying its tens of MB into every container (the daemon unpacks and
// writes each copy: 11 copies for a 5-node cluster, and four clusters
// started side by side wrote about 4 GB), the binary is committed once as
// a layer on top of the node image and every container of every cluster
// shares that layer. The layer is made through the engine's API (create,
// copy, commit), so a remote engine gets it the same way.
const (
	// AgentImageRepo is the repository of the agent images; the tag names
	// the node image and the binary: <node image id>-<binary sha256>, 12
	// hex digits each.
	AgentImageRepo = "fencecheck/agent"
	// LabelAgentImage marks an agent image, for the pruning of old ones.
	LabelAgentImage = "fencecheck.agent"
	// agentImageKeep is how long an agent image of another binary is kept
	// after it was made: a check binary rebuilt during development leaves
	// its old layer behind, and a comparison still running on it may
	// want it for another hour at most before its clusters are made.
	agentImageKeep = 6 * time.Hour
)

// agentImages makes agent images at most once per (node image, binary) at
// a time in this process, so clusters set up side by side wait for one
// commit rather than each making its own.
var agentImages struct {
	sync.Mutex
	making map[string]*sync.Mutex
}

// binarySum is the hex sha256 of a binary: what names its agent image.
func binarySum(binary []byte) string {
	s := sha256.Sum256(binary)
	return hex.EncodeToString(s[:])
}

// agentImage returns the tag of base with the binary (binaryTar: a tar of
// it, sum: its binarySum) at BinaryPath, making the image when the engine
// does not hold it yet. testID labels the short-lived container the
// commit is made from, so an interrupted setup's cleanup removes it.
func agentImage(ctx context.Context, cli *client.Client, base, testID string, binaryTar []byte, sum string) (string, error) {
	info, err := cli.ImageInspect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("inspecting %s: %w", base, DaemonError(cli.DaemonHost(), err))
	}
	baseID := strings.TrimPrefix(info.ID, "sha256:")
	tag := fmt.Sprintf("%s:%s-%s", AgentImageRepo, baseID[:min(12, len(baseID))], sum[:12])

	agentImages.Lock()
	if agentImages.making == nil {
		agentImages.making = map[string]*sync.Mutex{}
	}
	m := agentImages.making[tag]
	if m == nil {
		m = &sync.Mutex{}
		agentImages.making[tag] = m
	}
	agentImages.Unlock()
	m.Lock()
	defer m.Unlock()

	if ok, err := ImageExists(ctx, cli, tag); err != nil || ok {
		return tag, err
	}
	if err := commitAgentImage(ctx, cli, base, testID, tag, binaryTar); err != nil {
		return "", err
	}
	pruneAgentImages(ctx, cli, tag)
	return tag, nil
}

// commitAgentImage creates a container of base (never started), copies
// the binary into it, commits it as tag and removes the container.
func commitAgentImage(ctx context.Context, cli *client.Client, base, testID, tag string, binaryTar []byte) error {
	labels := Labels(testID)
	labels[LabelAgentImage] = "1"
	resp, err := cli.ContainerCreate(ctx, &container.Config{Image: base, Labels: labels}, nil, nil, nil, "")
	if err != nil {
		return fmt.Errorf("making the agent image %s: creating its container: %w", tag, DaemonError(cli.DaemonHost(), err))
	}
	defer removeContainer(context.WithoutCancel(ctx), cli, resp.ID)
	if err := cli.CopyToContainer(ctx, resp.ID, path.Dir(BinaryPath), bytes.NewReader(binaryTar), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("making the agent image %s: copying the binary: %w", tag, DaemonError(cli.DaemonHost(), err))
	}
	if _, err := cli.ContainerCommit(ctx, resp.ID, container.CommitOptions{Reference: tag,
		Comment: "fencecheck's node image with the check binary at " + BinaryPath}); err != nil {
		return fmt.Errorf("making the agent image %s: committing it: %w", tag, DaemonError(cli.DaemonHost(), err))
	}
	return nil
}

// pruneAgentImages removes agent images other than keep that are older
// than agentImageKeep, each only if no container uses it (the daemon
// refuses otherwise, and that refusal is the answer wanted): a rebuilt
// binary leaves its old layer behind, and without this they would pile up
// on the engine's disk. Errors are ignored; nothing depends on pruning.
func pruneAgentImages(ctx context.Context, cli *client.Client, keep string) {
	list, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", AgentImageRepo))})
	if err != nil {
		return
	}
	for _, im := range list {
		if time.Since(time.Unix(im.Created, 0)) < agentImageKeep {
			continue
		}
		for _, ref := range im.RepoTags {
			if ref != keep && strings.HasPrefix(ref, AgentImageRepo+":") {
				cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
			}
		}
	}
}

// withAgentImages is spec with its node image (and its client image, when
// it has one) replaced by their agent images for spec.Binary.
func withAgentImages(ctx context.Context, cli *client.Client, spec Spec) (Spec, error) {
	raw, err := os.ReadFile(spec.Binary)
	if err != nil {
		return spec, fmt.Errorf("test %s: reading the binary for %s: %w", spec.TestID, BinaryPath, err)
	}
	tarball, err := singleFileTar(path.Base(BinaryPath), raw, 0o755)
	if err != nil {
		return spec, err
	}
	sum := binarySum(raw)
	raw = nil
	if spec.Image, err = agentImage(ctx, cli, spec.Image, spec.TestID, tarball, sum); err != nil {
		return spec, fmt.Errorf("test %s: %w", spec.TestID, err)
	}
	if spec.ClientImage != "" {
		if spec.ClientImage, err = agentImage(ctx, cli, spec.ClientImage, spec.TestID, tarball, sum); err != nil {
			return spec, fmt.Errorf("test %s: %w", spec.TestID, err)
		}
	}
	return spec, nil
}
