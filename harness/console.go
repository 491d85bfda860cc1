package harness

import (
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// console is what a person at a terminal sees of a run: the log lines and,
// when the output is a terminal, one live status line kept under them
// (elapsed of limit, ops/s, ok/fail/info, active faults, the check).
// Written to a file or a pipe (CI), it shows the log lines only.
type console struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	status string
}

func newConsole(w io.Writer) *console {
	c := &console{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.tty = true
	}
	return c
}

// Line prints a log line above the status line.
func (c *console) Line(s string) {
	if c == nil || c.w == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty && c.status != "" {
		io.WriteString(c.w, "\r\033[K"+s+c.status)
		return
	}
	io.WriteString(c.w, s)
}

// Status replaces the live status line (terminals only).
func (c *console) Status(s string) {
	if c == nil || c.w == nil || !c.tty {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = s
	io.WriteString(c.w, "\r\033[K"+s)
}

// Clear removes the status line.
func (c *console) Clear() { c.Status("") }
