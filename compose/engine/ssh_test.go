package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/sshtransport"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// An ssh:// engine that refuses the connection, or accepts it and never
// speaks: Connect fails in bounded time with a message that names the
// engine and says what ssh said. Needs the ssh client, not Docker.
func TestSSHEngineUnreachableSaysWhyInBoundedTime(t *testing.T) {
	// The ssh command, found as the transport finds it.
	if _, err := exec.LookPath("ssh"); err != nil {
		dockertest.Unavailable(t, "the ssh command", err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	silentPort := silent.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		name string
		port int
		want string
	}{
		{"refused", refusedPort, "Connection refused"},
		{"silent", silentPort, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			host := "ssh://root@127.0.0.1:" + strconv.Itoa(c.port)
			t.Setenv("DOCKER_HOST", host)
			t.Setenv(sshtransport.OptsEnv, "-F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null")
			t.Setenv(TimeoutEnv, "2s")
			began := time.Now()
			cli, err := Connect(context.Background())
			took := time.Since(began)
			if err == nil {
				cli.Close()
				t.Fatal("Connect succeeded")
			}
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
			if took > 10*time.Second {
				t.Errorf("took %s, want the 2 s bound (plus little)", took)
			}
			msg := err.Error()
			if !strings.Contains(msg, host) {
				t.Errorf("the message does not name the engine %s: %s", host, msg)
			}
			if !strings.Contains(msg, "the Docker engine at "+host+" cannot be reached: ") {
				t.Errorf("not the cannot-be-reached message: %s", msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("the message lacks %q (ssh's own words): %s", c.want, msg)
			}
			if n := sshChildren(t); n != 0 {
				t.Errorf("%d ssh processes are left", n)
			}
		})
	}
}

func TestSSHEngineBadHostIsRefusedBeforeAnything(t *testing.T) {
	for host, want := range map[string]string{
		"ssh://root@host/var/run/docker.sock": "no path",
		"ssh://root:secret@host":              "password",
		"ssh://root@host:99999":               "not a port",
		"ssh://":                              "want ssh://",
	} {
		t.Setenv("DOCKER_HOST", host)
		cli, err := Connect(context.Background())
		if err == nil {
			cli.Close()
			t.Errorf("%s: accepted", host)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "DOCKER_HOST") {
			t.Errorf("%s: %v, want it to name DOCKER_HOST and say %q", host, err, want)
		}
	}
}

// sshChildren counts this process's ssh children, waiting up to 3 s for
// them to be reaped.
func sshChildren(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || !strings.Contains(s[:i], "(ssh") {
				continue
			}
			f := strings.Fields(s[i+1:])
			if len(f) > 1 && f[1] == fmt.Sprint(os.Getpid()) {
				n++
			}
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
}
