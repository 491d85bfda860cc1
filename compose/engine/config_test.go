package engine

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestContainerConfigs(t *testing.T) {
	spec := Spec{TestID: "t1", Image: "img:1", Servers: 3, Storage: true, Clients: 2}
	cfgs := ContainerConfigs(spec)
	var got []string
	for _, c := range cfgs {
		got = append(got, c.Node+"/"+c.Role+"/"+c.Name)
		if c.Config.Image != "img:1" || c.Config.Hostname != c.Node {
			t.Errorf("%s: image %q hostname %q", c.Node, c.Config.Image, c.Config.Hostname)
		}
		if c.Config.Labels[LabelFencecheck] != "1" || c.Config.Labels[LabelTest] != "t1" ||
			c.Config.Labels[LabelNode] != c.Node || c.Config.Labels[LabelRole] != c.Role {
			t.Errorf("%s: labels %v", c.Node, c.Config.Labels)
		}
		if len(c.Config.Cmd) != 0 || len(c.Config.Entrypoint) != 0 {
			t.Errorf("%s: overrides the image's CMD: %v %v", c.Node, c.Config.Entrypoint, c.Config.Cmd)
		}
		h := c.HostConfig
		if h.Privileged || strings.Join(h.CapAdd, ",") != "NET_ADMIN" || string(h.NetworkMode) != "fc-t1" || h.Init == nil || !*h.Init {
			t.Errorf("%s: host config %+v", c.Node, h)
		}
		ep := c.Networking.EndpointsConfig["fc-t1"]
		if ep == nil || strings.Join(ep.Aliases, ",") != c.Node {
			t.Errorf("%s: endpoint %+v", c.Node, ep)
		}
	}
	want := "n1/server/fc-t1-n1 n2/server/fc-t1-n2 n3/server/fc-t1-n3 storage/storage/fc-t1-storage c1/client/fc-t1-c1 c2/client/fc-t1-c2"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, " "), want)
	}
	// Each config has its own label map.
	cfgs[0].Config.Labels["x"] = "y"
	if _, ok := cfgs[1].Config.Labels["x"]; ok {
		t.Error("configs share their labels")
	}
	if n := NetworkOptions("t1"); !n.Internal || n.Driver != "bridge" || n.Labels[LabelTest] != "t1" {
		t.Errorf("network options %+v", n)
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{TestID: "run-1.a_b", Image: "i", Servers: 1}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Spec{
		{TestID: "", Image: "i", Servers: 1},
		{TestID: "Upper", Image: "i", Servers: 1},
		{TestID: "-x", Image: "i", Servers: 1},
		{TestID: "a/b", Image: "i", Servers: 1},
		{TestID: strings.Repeat("a", 49), Image: "i", Servers: 1},
		{TestID: "t", Servers: 1},
		{TestID: "t", Image: "i", Servers: -1},
		{TestID: "t", Image: "i"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	if err := missingImageError("fencecheck/node:abc"); !strings.Contains(err.Error(), "run `check image build`") ||
		!strings.Contains(err.Error(), "fencecheck/node:abc") {
		t.Error(err)
	}
	if err := nameTakenError("container", "fc-t-n1", "t", true); !strings.Contains(err.Error(), "name already taken: container fc-t-n1") ||
		!strings.Contains(err.Error(), "DownAll") {
		t.Error(err)
	}
	if err := nameTakenError("network", "fc-t", "t", false); !strings.Contains(err.Error(), "choose another test id") {
		t.Error(err)
	}

	denied := &url.Error{Op: "Get", URL: "http://docker/_ping", Err: &net.OpError{Op: "dial", Net: "unix",
		Err: os.NewSyscallError("connect", syscall.EACCES)}}
	err := DaemonError("unix:///var/run/docker.sock", denied)
	if !strings.Contains(err.Error(), "permission denied on the Docker socket /var/run/docker.sock") || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("permission: %v", err)
	}
}

// TestConnectUnreachable points the client at a socket nobody listens on.
func TestConnectUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Connect(ctx)
	want := "cannot reach the Docker daemon at unix://" + sock + ": is it running?"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Connect = %v\nwant prefix %q", err, want)
	}
}

func TestBufPipe(t *testing.T) {
	p := newBufPipe()
	// The writer never waits for a reader.
	for i := 0; i < 1000; i++ {
		if _, err := p.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(p)
		done <- b
	}()
	p.Write([]byte("end"))
	p.closeWithError(io.EOF)
	if b := <-done; len(b) != 10003 || !strings.HasSuffix(string(b), "end") {
		t.Errorf("read %d bytes", len(b))
	}
	if _, err := p.Write([]byte("x")); err == nil {
		t.Error("write after close")
	}
}
