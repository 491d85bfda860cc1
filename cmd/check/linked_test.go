package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The check binary links no package of Kubernetes: client-go's leader
// election lives in the kubernetes backend's own agent program
// (cmd/check-kubernetes), which the harness compiles on first use. With
// it, 406 of check's 994 packages were Kubernetes', the binary was 86 MB
// instead of 50 and a cold build took over three times as long — the
// README's first run starts with that build. A k8s.io import anywhere
// below cmd/check fails this test, naming the package that pulled it in.
func TestCheckBinaryLinksNoKubernetesPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	isK8s := func(pkg string) bool { return strings.HasPrefix(pkg, "k8s.io/") || strings.Contains(pkg, ".k8s.io/") }
	var linked, pulledBy []string
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		packages++
		if isK8s(f[0]) {
			linked = append(linked, f[0])
			continue
		}
		for _, imp := range f[1:] {
			if isK8s(imp) {
				pulledBy = append(pulledBy, f[0]+" imports "+imp)
			}
		}
	}
	if packages < 100 {
		t.Fatalf("go list -deps listed %d packages: not the check binary's dependencies", packages)
	}
	if len(linked) > 0 {
		t.Errorf("check links %d packages of Kubernetes (of %d); client-go belongs in the kubernetes agent program (backends/kubernetes/election, cmd/check-kubernetes). Pulled in by:\n  %s",
			len(linked), packages, strings.Join(pulledBy, "\n  "))
	}
}
