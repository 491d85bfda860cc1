package images

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
	for _, in := range coreInputs() {
		names[in.name] = true
	}
	for _, want := range []string{"node/Dockerfile", "node/dpkg-nodoc", "node/apt-fencecheck.conf",
		"etcd36/go.mod", "etcd36/go.sum", "etcd36/main.go"} {
		if !names[want] {
			t.Errorf("%s is not an input of the core image's hash", want)
		}
	}
	names = map[string]bool{}
	for _, in := range imageInputs() {
		names[in.name] = true
	}
	for _, want := range []string{"servers/Dockerfile", "servers/headless-jre.control", "core"} {
		if !names[want] {
			t.Errorf("%s is not an input of the node image's hash", want)
		}
	}

	// Changing the etcd wrapper changes both tags.
	core, before := CoreImageTag(), ImageTag()
	saved := etcdModules[EtcdImageVersion]["main.go"]
	etcdModules[EtcdImageVersion]["main.go"] = saved + "\n// changed\n"
	coreAfter, after := CoreImageTag(), ImageTag()
	etcdModules[EtcdImageVersion]["main.go"] = saved
	if core == coreAfter || before == after {
		t.Error("changing compose/images/etcd36/main.go does not change the tags")
	}
	if !strings.HasPrefix(core, ImageRepository+":core-") || core == before {
		t.Errorf("core tag %s, node tag %s", core, before)
	}
}

// contextFiles reads a build context's tar into names and contents.
func contextFiles(t *testing.T, r io.Reader) (map[string]*tar.Header, map[string]string) {
	t.Helper()
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	tr := tar.NewReader(r)
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
	return files, contents
}

// checkCopies checks that every file a Dockerfile COPYs is in its context.
func checkCopies(t *testing.T, files map[string]*tar.Header, dockerfile string, atLeast int) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(dockerfile))
	copies := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "COPY" {
			copies++
			for _, src := range f[1 : len(f)-1] {
				found := files[src] != nil
				for name := range files {
					found = found || strings.HasSuffix(src, "/") && strings.HasPrefix(name, src)
				}
				if !found {
					t.Errorf("Dockerfile copies %s, which is not in the context", src)
				}
			}
		}
	}
	if copies < atLeast {
		t.Errorf("found %d COPY lines, want at least %d", copies, atLeast)
	}
}

// TestBuildContext checks the tars sent to the daemon: every file a
// Dockerfile COPYs is in its context, the compiled servers are executable
// under bin/, and each stream is the same every time (so the daemon's
// cache can match it).
func TestBuildContext(t *testing.T) {
	compiled := []contextFile{{"bin/" + etcd36Binary, 0o755, []byte("\x7fELF fake etcd")}}
	var first, second bytes.Buffer
	if err := writeCoreContext(&first, compiled); err != nil {
		t.Fatal(err)
	}
	if err := writeCoreContext(&second, compiled); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("the core's build context differs between two writes")
	}
	files, contents := contextFiles(t, &first)
	bin := "bin/" + etcd36Binary
	if files[bin] == nil || files[bin].Mode != 0o755 || contents[bin] != string(compiled[0].data) {
		t.Errorf("etcd binary in the context: %+v", files[bin])
	}
	dockerfile, ok := contents["Dockerfile"]
	if !ok {
		t.Fatal("no Dockerfile in the core's context")
	}
	checkCopies(t, files, dockerfile, 3)
	for _, want := range []string{"FROM " + BaseImage, `CMD ["sleep", "infinity"]`, "COPY bin/ /usr/local/bin/",
		"iptables", "iproute2", "procps", "libfaketime", "rm -rf /var/lib/apt/lists/*"} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the core's Dockerfile lacks %q", want)
		}
	}
	for _, unwanted := range []string{"zookeeper", "postgresql", "redis-server", "etcd-server", "nats-server"} {
		if strings.Contains(dockerfile, unwanted) {
			t.Errorf("the core's Dockerfile installs %q, which an etcd run does not need", unwanted)
		}
	}

	var servers bytes.Buffer
	if err := writeServersContext(&servers); err != nil {
		t.Fatal(err)
	}
	files, contents = contextFiles(t, &servers)
	dockerfile = contents["Dockerfile"]
	checkCopies(t, files, dockerfile, 1)
	for _, want := range []string{"FROM ${CORE_IMAGE}", `CMD ["sleep", "infinity"]`, "policy-rc.d",
		"etcd-server", "zookeeper", "postgresql", "redis-server", "redis-sentinel", "nats-server", "rm -rf /var/lib/apt/lists/*"} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the servers' Dockerfile lacks %q", want)
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
