package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/models"
)

// The Kubernetes tests are two runs, each ~45 s, on the one API server
// build: the first run of a CI job compiles it (a few minutes), the
// second finds it in the user's cache.

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
	wantAPIServerVersion(t, out)
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

// wantAPIServerVersion checks results.json: the API server answered
// with the release it was compiled and stamped as, beside etcd's members.
func wantAPIServerVersion(t *testing.T, out *RunResult) {
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
	if versions["n4"] != "kube-apiserver "+images.KubeAPIServerVersion {
		t.Errorf("results.json servers %v: n4 is not kube-apiserver %s", versions, images.KubeAPIServerVersion)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if !strings.HasPrefix(versions[n], "etcd "+images.EtcdImageVersion+".") {
			t.Errorf("results.json servers %v: %s is not etcd %s.x", versions, n, images.EtcdImageVersion)
		}
	}
}
