package images

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/clientdir"
)

func TestClientDockerfile(t *testing.T) {
	df := ClientDockerfile("fencecheck/node:abc", clientdir.Manifest{Packages: []string{"python3-kazoo"}, Build: []string{`javac -cp "a b" X.java`}})
	for _, want := range []string{"FROM fencecheck/node:abc\n", "apt-get install -y --no-install-recommends python3-kazoo;", "policy-rc.d",
		"COPY client/ /client/\nWORKDIR /client\n", `RUN ["sh","-ec","javac -cp \"a b\" X.java"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, df)
		}
	}
	if df := ClientDockerfile("n", clientdir.Manifest{}); strings.Contains(df, "apt-get") {
		t.Errorf("no packages, yet:\n%s", df)
	}
}
