package lossyfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// The power states of a layer (cut.go).
const (
	powerOn int32 = iota
	// powerFrozen: the power is cut; every call that changes the disk
	// below waits for the drop.
	powerFrozen
	// powerDead: the cut is being finished; those calls fail with EIO at
	// once.
	powerDead
)

// power is a layer's power state and its armed trigger.
type power struct {
	state atomic.Int32
	// armed is set while a sync trigger waits: the one load a sync pays
	// when nothing is armed.
	armed atomic.Bool
	// held counts the calls a freeze has held, for tests.
	held atomic.Int32

	mu     sync.Mutex
	thaw   chan struct{} // closed when the frozen calls may fail
	trig   *Trigger
	seen   int
	timer  *time.Timer
	froze  *Freeze
	frozen chan struct{} // closed at the freeze
}

// gate lets a call that changes the disk below through while the power
// is on; while it is cut, the call waits for the drop and fails (its
// process is dead by then).
func (l *Layer) gate() syscall.Errno {
	switch l.power.state.Load() {
	case powerOn:
		return 0
	case powerFrozen:
		l.power.held.Add(1)
		l.power.mu.Lock()
		thaw := l.power.thaw
		l.power.mu.Unlock()
		if thaw != nil {
			<-thaw
		}
	}
	return syscall.EIO
}

// synced runs sync, a sync of e the program asked for, where an armed
// sync trigger says: a freeze before it (sync never runs), after it (the
// program never hears of it), or none.
func (l *Layer) synced(e *entry, sync func() error) syscall.Errno {
	if l.power.armed.Load() {
		switch timing, n := l.countSync(e.path); timing {
		case "before":
			l.freeze(fmt.Sprintf("before sync %d of %s", n, e.path))
			return l.gate()
		case "after":
			err := sync()
			l.freeze(fmt.Sprintf("after sync %d of %s (%v)", n, e.path, errText(err)))
			return l.gate()
		}
	}
	return fs.ToErrno(sync())
}

func errText(err error) string {
	if err == nil {
		return "it reached the disk below"
	}
	return "it failed: " + err.Error()
}

// countSync counts a sync of the file at rel against the armed trigger:
// "before" or "after" when it is the one the trigger names (the nth).
func (l *Layer) countSync(rel string) (timing string, n int) {
	p := &l.power
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trig == nil || !p.trig.Matches(rel) {
		return "", 0
	}
	p.seen++
	if p.seen < p.trig.N {
		return "", 0
	}
	p.armed.Store(false)
	if p.trig.After {
		return "after", p.seen
	}
	return "before", p.seen
}

// Arm sets t: the layer freezes by itself when it comes. Arming again
// replaces an armed trigger that has not fired.
func (l *Layer) Arm(t Trigger) error {
	p := &l.power
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.froze != nil || l.power.state.Load() != powerOn {
		return fmt.Errorf("the power is already cut")
	}
	l.disarmLocked()
	p.trig, p.seen = &t, 0
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
	if !t.At.IsZero() {
		p.timer = time.AfterFunc(time.Until(t.At), func() {
			l.freeze("at the instant " + t.At.UTC().Format("15:04:05.000000"))
		})
		return nil
	}
	p.armed.Store(true)
	return nil
}

// Disarm forgets an armed trigger that has not fired.
func (l *Layer) Disarm() {
	l.power.mu.Lock()
	defer l.power.mu.Unlock()
	l.disarmLocked()
}

func (l *Layer) disarmLocked() {
	p := &l.power
	p.armed.Store(false)
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.trig = nil
}

// freeze cuts the power now, if it is on: the calls that change the disk
// below wait from here, and every process holding a file under the
// mount is SIGKILLed.
func (l *Layer) freeze(why string) {
	p := &l.power
	p.mu.Lock()
	if !p.state.CompareAndSwap(powerOn, powerFrozen) {
		p.mu.Unlock()
		return
	}
	now := time.Now()
	p.thaw = make(chan struct{})
	l.disarmLocked()
	p.froze = &Freeze{At: now, AtNano: now.UnixNano(), Why: why}
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
	frozen := p.frozen
	p.mu.Unlock()
	killed := l.killHolders()
	p.mu.Lock()
	p.froze.Killed = killed
	p.mu.Unlock()
	close(frozen)
}

// Wait waits until the layer has frozen (by its trigger) or ctx ends,
// and says when and why.
func (l *Layer) Wait(ctx context.Context) (*Freeze, error) {
	p := &l.power
	p.mu.Lock()
	if p.froze != nil {
		f := *p.froze
		p.mu.Unlock()
		return &f, nil
	}
	if p.frozen == nil {
		p.mu.Unlock()
		return nil, fmt.Errorf("nothing is armed and the power is on")
	}
	ch := p.frozen
	p.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, fmt.Errorf("the trigger did not come: %w", ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f := *p.froze
	return &f, nil
}

// Cut is a power cut finished: the freeze (now, if no trigger froze the
// layer before), the calls it held failed, every process holding a file
// under the mount gone, and what was never synced dropped, with what
// torn keeps of it (drawn from seed). The power is then on again.
func (l *Layer) Cut(torn Torn, seed uint64) (Freeze, Dropped, error) {
	l.freeze("on command")
	p := &l.power
	p.mu.Lock()
	froze := *p.froze
	p.state.Store(powerDead)
	close(p.thaw)
	p.mu.Unlock()
	// The held calls now fail; their processes were SIGKILLed and die as
	// they return. Any process still holding a file here is killed too,
	// until none is left.
	var err error
	for i := 0; ; i++ {
		if len(l.killHolders()) == 0 {
			break
		}
		if i == 200 {
			err = fmt.Errorf("processes still hold files in %s after 5 s", l.mount)
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	var d Dropped
	if err == nil {
		// The names first: a file whose create is undone has no
		// content left to drop.
		var nerr error
		d.Names, nerr = l.undoNames()
		d2, derr := l.DropTorn(torn, seed)
		d2.Names = d.Names
		d, err = d2, errors.Join(nerr, derr)
	}
	p.mu.Lock()
	p.froze, p.frozen, p.thaw = nil, nil, nil
	p.state.Store(powerOn)
	p.mu.Unlock()
	return froze, d, err
}

// killHolders SIGKILLs every process (but this one) with a descriptor on
// a file under the mount, and returns their pids. The layer shares the
// node's PID namespace, so /proc lists the node's processes.
func (l *Layer) killHolders() []int {
	self := os.Getpid()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var killed []int
	for _, proc := range procs {
		pid, err := strconv.Atoi(filepath.Base(proc))
		if err != nil || pid == self {
			continue
		}
		fds, _ := os.ReadDir(proc + "/fd")
		for _, fd := range fds {
			target, err := os.Readlink(proc + "/fd/" + fd.Name())
			if err != nil || !l.under(target) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
			break
		}
	}
	return killed
}

// under reports whether p is the mount or a path in it.
func (l *Layer) under(p string) bool {
	return p == l.mount || (len(p) > len(l.mount) && p[:len(l.mount)] == l.mount && p[len(l.mount)] == '/')
}
