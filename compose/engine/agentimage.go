package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// The agent image: a node image with the check binary already at
// BinaryPath, and the programs of Spec.Programs beside it. A cluster's nodes all run the same binary, so instead of
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

// layerSum is what names an agent image's layer: the check binary's sum
// alone when the layer holds nothing else (so the tag of such an image
// is what it always was), else the sum of the binary's and every
// program's path and sum, so that a change to any of them makes another
// image.
func layerSum(binSum string, programs []Program) string {
	if len(programs) == 0 {
		return binSum
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", BinaryPath, binSum)
	for _, p := range sortedPrograms(programs) {
		fmt.Fprintf(h, "%s\x00%s\x00", p.Path, binarySum(p.Data))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ProgramsSum names a set of programs in a short hash ("" for none), for
// telling apart clusters whose nodes carry different ones.
func ProgramsSum(programs []Program) string {
	if len(programs) == 0 {
		return ""
	}
	return layerSum("", programs)[:12]
}

func sortedPrograms(programs []Program) []Program {
	out := slices.Clone(programs)
	slices.SortFunc(out, func(a, b Program) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// layerTar is the agent image's one layer as a tar to unpack at /: the
// check binary at BinaryPath and each program at its path, all
// executable.
func layerTar(binary []byte, programs []Program) ([]byte, error) {
	files := []tarFile{{Name: strings.TrimPrefix(BinaryPath, "/"), Data: binary, Mode: 0o755}}
	for _, p := range sortedPrograms(programs) {
		files = append(files, tarFile{Name: strings.TrimPrefix(p.Path, "/"), Data: p.Data, Mode: 0o755})
	}
	return filesTar(files)
}

// agentImage returns the tag of base with the layer layerTar (the binary
// at BinaryPath and the programs, unpacked at /; sum: its layerSum) on
// top, making the image when the engine does not hold it yet. testID
// labels the short-lived container the commit is made from, so an
// interrupted setup's cleanup removes it.
func agentImage(ctx context.Context, cli *client.Client, base, testID string, layerTar []byte, sum string) (string, error) {
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
	if err := commitAgentImage(ctx, cli, base, testID, tag, layerTar); err != nil {
		return "", err
	}
	pruneAgentImages(ctx, cli, tag)
	return tag, nil
}

// commitAgentImage creates a container of base (never started), copies
// the layer's files into it, commits it as tag and removes the container.
func commitAgentImage(ctx context.Context, cli *client.Client, base, testID, tag string, layerTar []byte) error {
	labels := Labels(testID)
	labels[LabelAgentImage] = "1"
	resp, err := cli.ContainerCreate(ctx, &container.Config{Image: base, Labels: labels}, nil, nil, nil, "")
	if err != nil {
		return fmt.Errorf("making the agent image %s: creating its container: %w", tag, DaemonError(cli.DaemonHost(), err))
	}
	defer removeContainer(context.WithoutCancel(ctx), cli, resp.ID)
	if err := cli.CopyToContainer(ctx, resp.ID, "/", bytes.NewReader(layerTar), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("making the agent image %s: copying the binaries: %w", tag, DaemonError(cli.DaemonHost(), err))
	}
	if _, err := cli.ContainerCommit(ctx, resp.ID, container.CommitOptions{Reference: tag,
		Comment: "fencecheck's node image with the check binary at " + BinaryPath + " (and the backend's own agent program beside it, if any)"}); err != nil {
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
// it has one) replaced by their agent images for spec.Binary and
// spec.Programs.
func withAgentImages(ctx context.Context, cli *client.Client, spec Spec) (Spec, error) {
	raw, err := os.ReadFile(spec.Binary)
	if err != nil {
		return spec, fmt.Errorf("test %s: reading the binary for %s: %w", spec.TestID, BinaryPath, err)
	}
	tarball, err := layerTar(raw, spec.Programs)
	if err != nil {
		return spec, err
	}
	sum := layerSum(binarySum(raw), spec.Programs)
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
