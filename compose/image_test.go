package compose

import (
	"archive/tar"
	"bufio"
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
)

func TestImageTagShape(t *testing.T) {
	tag := ImageTag()
	if !regexp.MustCompile(`^fencecheck/node:[0-9a-f]{12}$`).MatchString(tag) {
		t.Fatalf("ImageTag() = %q", tag)
	}
	if tag != ImageTag() {
		t.Fatal("ImageTag is not stable")
	}
}

func TestInputsHash(t *testing.T) {
	a := []input{{"node/Dockerfile", []byte("FROM x")}, {"etcd36/main.go", []byte("package main")}}
	b := []input{a[1], a[0]}
	if inputsHash(a) != inputsHash(b) {
		t.Error("the hash depends on the order of the inputs")
	}
	changed := []input{{"node/Dockerfile", []byte("FROM y")}, a[1]}
	if inputsHash(a) == inputsHash(changed) {
		t.Error("a changed file does not change the hash")
	}
	renamed := []input{{"node/Dockerfile2", []byte("FROM x")}, a[1]}
	if inputsHash(a) == inputsHash(renamed) {
		t.Error("a renamed file does not change the hash")
	}
	// Framing: moving bytes from a name to its content is a different input.
	if inputsHash([]input{{"ab", []byte("c")}}) == inputsHash([]input{{"a", []byte("bc")}}) {
		t.Error("names and contents run together")
	}
	if len(inputsHash(nil)) != 12 {
		t.Error("hash length")
	}
}

func TestImageInputsCoverEverything(t *testing.T) {
	names := map[string]bool{}
	for _, in := range imageInputs() {
		names[in.name] = true
	}
	for _, want := range []string{"node/Dockerfile", "node/dpkg-nodoc", "node/apt-fencecheck.conf", "node/headless-jre.control",
		"etcd36/go.mod", "etcd36/go.sum", "etcd36/main.go"} {
		if !names[want] {
			t.Errorf("%s is not an input of the image hash", want)
		}
	}

	// Changing the etcd wrapper changes the tag.
	before := ImageTag()
	saved := etcdModules[EtcdImageVersion]["main.go"]
	etcdModules[EtcdImageVersion]["main.go"] = saved + "\n// changed\n"
	after := ImageTag()
	etcdModules[EtcdImageVersion]["main.go"] = saved
	if before == after {
		t.Error("changing compose/etcd36/main.go does not change the tag")
	}
}

// TestBuildContext checks the tar sent to the daemon: every file the
// Dockerfile COPYs is in it, the binary is executable, and the stream is
// the same every time (so the daemon's cache can match it).
func TestBuildContext(t *testing.T) {
	etcd := []byte("\x7fELF fake etcd")
	var first, second bytes.Buffer
	if err := writeBuildContext(&first, etcd); err != nil {
		t.Fatal(err)
	}
	if err := writeBuildContext(&second, etcd); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("the build context differs between two writes")
	}
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	tr := tar.NewReader(&first)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[hdr.Name] = hdr
		contents[hdr.Name] = string(b)
	}
	if files[etcd36Binary] == nil || files[etcd36Binary].Mode != 0o755 || contents[etcd36Binary] != string(etcd) {
		t.Errorf("etcd binary in the context: %+v", files[etcd36Binary])
	}
	dockerfile, ok := contents["Dockerfile"]
	if !ok {
		t.Fatal("no Dockerfile in the context")
	}
	sc := bufio.NewScanner(strings.NewReader(dockerfile))
	copies := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "COPY" {
			copies++
			for _, src := range f[1 : len(f)-1] {
				if files[src] == nil {
					t.Errorf("Dockerfile copies %s, which is not in the context", src)
				}
			}
		}
	}
	if copies < 3 {
		t.Errorf("found %d COPY lines", copies)
	}
	for _, want := range []string{"FROM " + BaseImage, `CMD ["sleep", "infinity"]`, "policy-rc.d",
		"etcd-server", "zookeeper", "postgresql", "redis-server", "iptables", "iproute2", "procps",
		"rm -rf /var/lib/apt/lists/*"} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

func TestReadMessages(t *testing.T) {
	stream := `{"stream":"Step 1/2 : FROM x\n"}
{"stream":" ---> abc\n"}
{"status":"sha256:123"}
{"errorDetail":{"message":"The command '/bin/sh -c false' returned a non-zero code: 1"},"error":"The command '/bin/sh -c false' returned a non-zero code: 1"}
{"stream":"never read\n"}
`
	var out bytes.Buffer
	err := readMessages(strings.NewReader(stream), &out)
	if err == nil || !strings.Contains(err.Error(), "returned a non-zero code: 1") {
		t.Errorf("error = %v", err)
	}
	if out.String() != "Step 1/2 : FROM x\n ---> abc\nsha256:123\n" {
		t.Errorf("progress = %q", out.String())
	}
	if err := readMessages(strings.NewReader(`{"stream":"ok\n"}`), io.Discard); err != nil {
		t.Error(err)
	}
}
