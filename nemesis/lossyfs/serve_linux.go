package lossyfs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
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
func Serve(dir, disk, socket string, opts Options, log io.Writer) error {
	runtime.GOMAXPROCS(1)
	for _, d := range []string{dir, disk, filepath.Dir(socket)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := fuseDevice(); err != nil {
		return err
	}
	srv, l, err := Mount(dir, disk, opts)
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

// answer runs one command against l (Commands).
func (l *Layer) answer(line string) Answer {
	words := strings.Fields(line)
	if len(words) == 0 {
		return Answer{Error: "an empty command"}
	}
	args, err := parseArgs(words[1:])
	if err != nil {
		return Answer{Error: err.Error()}
	}
	torn, err := ParseTorn(args["torn"])
	if err != nil {
		return Answer{Error: err.Error()}
	}
	if torn != TornNone && !l.opts.KeepWrites {
		return Answer{Error: fmt.Sprintf("torn=%s needs the layer to keep its writes (serve --keep-writes)", torn)}
	}
	var seed uint64
	if v, ok := args["seed"]; ok {
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return Answer{Error: fmt.Sprintf("seed=%q is no number", v)}
		}
	}
	switch words[0] {
	case CmdDrop:
		d, err := l.DropTorn(torn, seed)
		if err != nil {
			return Answer{Error: err.Error(), Dropped: &d}
		}
		return Answer{OK: true, Dropped: &d}
	case CmdStatus:
		return Answer{OK: true, Unsynced: l.Unsynced()}
	case CmdArm:
		t, err := ParseTrigger(args)
		if err == nil {
			err = l.Arm(t)
		}
		if err != nil {
			return Answer{Error: err.Error()}
		}
		return Answer{OK: true}
	case CmdDisarm:
		l.Disarm()
		return Answer{OK: true}
	case CmdWait:
		timeout := 10 * time.Second
		if v, ok := args["timeout"]; ok {
			if timeout, err = time.ParseDuration(v); err != nil {
				return Answer{Error: fmt.Sprintf("timeout=%q is no duration", v)}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		f, err := l.Wait(ctx)
		if err != nil {
			return Answer{Error: err.Error()}
		}
		return Answer{OK: true, Freeze: f}
	case CmdCut:
		f, d, err := l.Cut(torn, seed)
		a := Answer{OK: err == nil, Freeze: &f, Dropped: &d}
		if err != nil {
			a.Error = err.Error()
		}
		return a
	}
	return Answer{Error: fmt.Sprintf("unknown command %q (accepted: %s)", words[0], strings.Join(Commands, ", "))}
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
			c.SetDeadline(time.Now().Add(10 * time.Minute))
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
