package sshnodes

import (
	"bytes"
	"io"
	"sync"
)

// bufPipe is a pipe whose writer never blocks: what is not read yet is
// kept in memory, so that a stream's reader may read stdout alone while
// stderr fills (as compose/engine's streams allow).
type bufPipe struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	err  error
}

func newBufPipe() *bufPipe {
	p := &bufPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *bufPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, io.ErrClosedPipe
	}
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && p.err == nil {
		p.cond.Wait()
	}
	if p.buf.Len() > 0 {
		return p.buf.Read(b)
	}
	return 0, p.err
}

func (p *bufPipe) closeWithError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
}

// startGate keeps a Pause of a node from landing while a process is being
// started there (it would be frozen before it is recorded, or before its
// caller is ready): starts may overlap and nest; a pause waits until none
// is going on, and starts wait while a pause is being applied.
type startGate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	starting int
	pausing  bool
}

func (g *startGate) init() {
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
}

// hold keeps pauses off until the returned func is called.
func (g *startGate) hold() (release func()) {
	g.mu.Lock()
	g.init()
	for g.pausing {
		g.cond.Wait()
	}
	g.starting++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.starting--
			g.cond.Broadcast()
			g.mu.Unlock()
		})
	}
}

// pause runs f once no start is going on, holding starts off meanwhile.
func (g *startGate) pause(f func() error) error {
	g.mu.Lock()
	g.init()
	for g.starting > 0 || g.pausing {
		g.cond.Wait()
	}
	g.pausing = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.pausing = false
		g.cond.Broadcast()
		g.mu.Unlock()
	}()
	return f()
}
