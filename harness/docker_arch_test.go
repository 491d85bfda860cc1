package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// An agent binary built for another architecture than the engine's (as
// happens with a remote engine) is refused before anything is created,
// with the command that builds the right one.
func TestDockerAgentOfAnotherArchitectureIsRefused(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[ver.Arch]
	if other == "" {
		dockertest.Unavailable(t, "an engine of amd64 or arm64 (the test builds the agent for the other one)", fmt.Errorf("the engine runs %s", ver.Arch))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "agent")
	build := exec.Command("go", "build", "-o", bin, "main.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+other, "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	err = agentMatchesEngine(ctx, cli, bin)
	if err == nil || !strings.Contains(err.Error(), "runs "+ver.Arch) || !strings.Contains(err.Error(), "GOARCH="+ver.Arch) {
		t.Errorf("an %s agent for an %s engine: %v", other, ver.Arch, err)
	}
	if err := agentMatchesEngine(ctx, cli, dockertest.CheckBinary(t)); err != nil {
		t.Errorf("the engine's own architecture: %v", err)
	}
}
