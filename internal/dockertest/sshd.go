package dockertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// SSHD is a private sshd in front of this machine's Docker engine.
type SSHD struct {
	// Host is the DOCKER_HOST that reaches the engine through it.
	Host string
	// Opts is the value for FENCECHECK_SSH_OPTS: the key, the known host.
	Opts string
	log  *lockedLog
}

// Logins is the number of ssh logins the daemon has accepted so far: each
// is one connection to the Docker engine.
func (s *SSHD) Logins() int { return strings.Count(s.log.String(), "Accepted publickey for root") }

// SSHEngine starts a private sshd on 127.0.0.1 that lets root in with a
// key made for this test, so that a test can reach this machine's Docker
// engine as a remote one: DOCKER_HOST=ssh://root@127.0.0.1:PORT with
// FENCECHECK_SSH_OPTS=Opts. The daemon has its own config, host key,
// authorized key and port in a temporary directory (the machine's sshd
// config is never read or touched) and is killed when the test ends. A
// missing sshd, ssh or docker command ends the test as Unavailable does.
func SSHEngine(t testing.TB) *SSHD {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
		if _, serr := os.Stat(sshd); serr != nil {
			Unavailable(t, "sshd (Debian's openssh-server)", err)
		}
	}
	for _, cmd := range []string{"ssh", "ssh-keygen", "docker"} {
		if _, err := exec.LookPath(cmd); err != nil {
			Unavailable(t, "the "+cmd+" command (for an ssh:// Docker engine)", err)
		}
	}
	dir := t.TempDir()
	for _, key := range []string{"host", "client"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fencecheck-test-"+key,
			"-f", filepath.Join(dir, key)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	clientPub, err := os.ReadFile(filepath.Join(dir, "client.pub"))
	if err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(filepath.Join(dir, "host.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), clientPub, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	hostFields := strings.Fields(string(hostPub))
	known := fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, hostFields[0], hostFields[1])
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile none
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 100
MaxStartups 100:30:200
LogLevel INFO
`, port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"))
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd insists on its privilege separation directory, as Debian's
	// service creates it.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	logBuf := &lockedLog{}
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = logBuf, logBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() && logBuf.Len() > 0 {
			t.Logf("sshd's log:\n%s", tailLines(logBuf.String(), 40))
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("sshd ended at start: %v\n%s", err, logBuf.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen on %d after 10 s: %v\n%s", port, err, logBuf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	opts := strings.Join([]string{
		"-F", "/dev/null", "-i", filepath.Join(dir, "client"), "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + filepath.Join(dir, "known_hosts"), "-o", "StrictHostKeyChecking=yes",
	}, " ")
	return &SSHD{Host: fmt.Sprintf("ssh://root@127.0.0.1:%d", port), Opts: opts, log: logBuf}
}

// lockedLog is sshd's output, written by exec's copier, read by Logins.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
