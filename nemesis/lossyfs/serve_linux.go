package lossyfs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Ready is the line Serve writes once the layer is mounted and takes
// commands: whoever starts it waits for it.
const Ready = "lossyfs: mounted"

// Serve mounts the layer at dir over disk (creating both), answers
// commands on socket, and serves until SIGTERM or SIGINT, then unmounts.
//
// It runs Go on one processor. Its work is a syscall or two per request,
// one request after another; with a processor per core, Go's idle
// processors spun looking for work between requests, on a 2-core machine
// the lock servers' CPU: etcd's ops/s on the layer rose 6 % with one
// (docs/benchmarks.md, "The power faults' filesystem layer").
func Serve(dir, disk, socket string, log io.Writer) error {
	runtime.GOMAXPROCS(1)
	for _, d := range []string{dir, disk, filepath.Dir(socket)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := fuseDevice(); err != nil {
		return err
	}
	srv, l, err := Mount(dir, disk)
	if err != nil {
		return fmt.Errorf("mounting the layer at %s over %s: %w", dir, disk, err)
	}
	os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		srv.Unmount()
		return err
	}
	go l.listen(ln)
	fmt.Fprintf(log, "%s at %s over %s, commands on %s\n", Ready, dir, disk, socket)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		ln.Close()
		srv.Unmount()
	}()
	srv.Wait()
	ln.Close()
	return nil
}

// answer runs one command against l.
func (l *Layer) answer(cmd string) Answer {
	switch strings.TrimSpace(cmd) {
	case CmdDrop:
		d := l.Drop()
		return Answer{OK: true, Dropped: &d}
	case CmdStatus:
		return Answer{OK: true, Unsynced: l.Unsynced()}
	}
	return Answer{Error: fmt.Sprintf("unknown command %q (accepted: %s, %s)", strings.TrimSpace(cmd), CmdDrop, CmdStatus)}
}

// listen answers commands on ln until it is closed.
func (l *Layer) listen(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return
			}
			b, _ := json.Marshal(l.answer(line))
			c.Write(append(b, '\n'))
		}()
	}
}

// fuseDevice makes /dev/fuse where this process's mount namespace has
// none: the layer runs in a node's mount namespace (whose /dev has no
// fuse device) from a container of its own that may use the device. The
// node's own processes see the file but their cgroup may not open it.
func fuseDevice() error {
	if _, err := os.Stat("/dev/fuse"); err == nil {
		return nil
	}
	if err := unix.Mknod("/dev/fuse", unix.S_IFCHR|0o600, int(unix.Mkdev(10, 229))); err != nil {
		return fmt.Errorf("making /dev/fuse: %w", err)
	}
	return nil
}
