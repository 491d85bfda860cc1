package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/backends/kubernetes"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// The Kubernetes tests are three runs, each ~45 s (the one with three API
// servers a little longer), on the one API server build: the first run of
// a CI job compiles it (a few minutes), the others find it in the user's
// cache.

// client-go's leader believes it leads until its next renewal shows the
// Lease taken over: a leader frozen past LeaseDuration wakes, passes its
// IsLeader() check and writes after another has been elected — two
// leaders at once, and with no fencing the stale write is accepted.
func TestDockerKubernetesUnfencedLeaderUnderHolderPauseIsInvalid(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "kubernetes", "none", "pause-holder"))
	wantDocker(t, out, models.Invalid)
	wantFaults(t, out, "pause-holder")
	story := storyText(t, out)
	leaders := map[string]bool{}
	for _, m := range regexp.MustCompile(`process \d+`).FindAllString(story, -1) {
		leaders[m] = true
	}
	if len(leaders) < 2 || !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("the story does not name the two leaders (%v):\n%s\nexplanation: %s", leaders, story, out.Result.Explanation)
	}
	wantAPIServerVersion(t, out, "n4")
}

// Three API servers in front of the same etcd change nothing for an
// unfenced leader: the frozen one wakes and writes, whichever API server
// it speaks to. The run sets up and asks each of the three API servers
// (n4–n6) what it is.
func TestDockerKubernetesThreeAPIServersUnfencedLeaderUnderHolderPauseIsInvalid(t *testing.T) {
	cfg := dockerConfig(t, "kubernetes", "none", "pause-holder")
	cfg.Options = map[string]string{kubernetes.APIServersFlag: "3"}
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Invalid)
	wantFaults(t, out, "pause-holder")
	wantAPIServerVersion(t, out, "n4", "n5", "n6")
	if out.Report == nil || !slices.ContainsFunc(out.Report.Params, func(p reports.Param) bool {
		return p.Name == "API servers" && strings.Contains(p.Value, "p mod 3")
	}) {
		t.Errorf("the report does not say which API server each client speaks to")
	}
}

// The same frozen leaders' late writes, refused by the storage's token
// check: leaseTransitions, read back by the winner, orders the leaders.
func TestDockerKubernetesFencedLeaderUnderHolderPauseIsValid(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "kubernetes", "all", "pause-holder"))
	wantDocker(t, out, models.Valid)
	wantFaults(t, out, "pause-holder")
	if fencedOps(t, out) == 0 {
		t.Errorf("no late write was refused: the pauses proved nothing")
	}
	wantFinalReads(t, out, 1)
}

// wantAPIServerVersion checks results.json: each API server (on the nodes
// named) answered with the release it was compiled and stamped as, beside
// etcd's members, and no other node claims to be one.
func wantAPIServerVersion(t *testing.T, out *RunResult, apiservers ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Servers struct {
			Nodes []struct{ Node, Version string }
		}
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, n := range res.Servers.Nodes {
		versions[n.Node] = n.Version
	}
	for _, n := range apiservers {
		if versions[n] != "kube-apiserver "+images.KubeAPIServerVersion {
			t.Errorf("results.json servers %v: %s is not kube-apiserver %s", versions, n, images.KubeAPIServerVersion)
		}
	}
	named := 0
	for _, v := range versions {
		if strings.HasPrefix(v, "kube-apiserver ") {
			named++
		}
	}
	if named != len(apiservers) {
		t.Errorf("results.json servers %v: %d kube-apiserver nodes, want %d", versions, named, len(apiservers))
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if !strings.HasPrefix(versions[n], "etcd "+images.EtcdImageVersion+".") {
			t.Errorf("results.json servers %v: %s is not etcd %s.x", versions, n, images.EtcdImageVersion)
		}
	}
}
