package images

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/fencecheck/fencecheck/internal/lines"
)

// BuildOutput is how an image build shows itself: one line per step with
// its elapsed time (the base image, a compile, Debian's packages, a client
// image), and on a terminal a live line naming the steps under way. What
// the tools themselves print (debootstrap, apt, go, docker) goes to a log
// file, whose path is printed with the first step; when a step fails, its
// name and the last lines it printed are shown. Verbose streams the tools'
// output instead, as it comes.
//
// Every function of this package that takes a progress writer treats a
// *BuildOutput as this; any other writer gets the whole stream, as before.
type BuildOutput struct {
	w       io.Writer
	verbose bool
	tty     bool
	logDir  string
	record  func(string)
	now     func() time.Time
	// heartbeat is how often a non-terminal writer gets a line naming
	// the steps under way (heartbeatEvery; tests shorten it).
	heartbeat time.Duration

	mu      sync.Mutex
	log     *os.File
	logPath string
	logErr  error
	active  []*Step
	status  string
	ticking bool
}

// BuildOutputOptions say how a BuildOutput prints.
type BuildOutputOptions struct {
	// Verbose streams the tools' output to the writer instead of one line
	// per step.
	Verbose bool
	// LogDir is where the log file of a build goes (BuildLogDir); "" keeps
	// no log file (the failing step's last lines are still shown).
	LogDir string
	// Record, when set, also gets every line printed to the writer (the
	// steps' lines, the build's own lines, the heartbeats), without a
	// terminal's control codes: a run puts them in its check.log.
	Record func(line string)
}

// heartbeatEvery is how often a writer that is not a terminal (a CI log,
// a pipe) hears from steps still running, since it has no live line: a
// first run's compiles take minutes, and silence that long looks like a
// hang.
const heartbeatEvery = 10 * time.Second

// NewBuildOutput prints an image build's steps to w; a live status line is
// kept only when w is a terminal.
func NewBuildOutput(w io.Writer, opts BuildOutputOptions) *BuildOutput {
	if w == nil {
		w = io.Discard
	}
	o := &BuildOutput{w: w, verbose: opts.Verbose, logDir: opts.LogDir, record: opts.Record, now: time.Now, heartbeat: heartbeatEvery}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		o.tty = true
	}
	return o
}

// BuildLogDir is where image builds keep their logs: fencecheck's
// directory under the user's cache, or the temporary directory.
func BuildLogDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "fencecheck", "logs")
	}
	return filepath.Join(os.TempDir(), "fencecheck-logs")
}

// buildOutputOf is the BuildOutput behind a progress writer: itself, or
// one that streams everything to it (nil: nothing shown).
func buildOutputOf(progress io.Writer) *BuildOutput {
	if o, ok := progress.(*BuildOutput); ok {
		return o
	}
	return NewBuildOutput(progress, BuildOutputOptions{Verbose: progress != nil})
}

// Write lets a BuildOutput stand where a progress writer is expected: text
// written outside any step goes to the log once a step has opened it (and,
// verbose, to the writer), so a run whose images are all there writes no
// log.
func (o *BuildOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.log != nil {
		o.log.Write(p)
	}
	if o.verbose {
		o.w.Write(p)
	}
	return len(p), nil
}

// Linef prints a line of the build's own (not a step's), above the
// status line.
func (o *BuildOutput) Linef(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if o.log != nil {
		fmt.Fprintln(o.log, line)
	}
	o.lineLocked(line)
}

// LogPath is the build log's path, "" before the first step or without one.
func (o *BuildOutput) LogPath() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.logPath
}

// Close stops the status line and closes the log.
func (o *BuildOutput) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.active = nil
	o.drawLocked()
	if o.log != nil {
		err := o.log.Close()
		o.log = nil
		return err
	}
	return nil
}

// openLogLocked creates the log file the first time it is needed, and
// says where it is.
func (o *BuildOutput) openLogLocked() {
	if o.log != nil || o.logErr != nil || o.logDir == "" {
		return
	}
	if o.logErr = os.MkdirAll(o.logDir, 0o755); o.logErr == nil {
		name := "build-" + o.now().UTC().Format("20060102T150405.000Z") + ".log"
		o.log, o.logErr = os.Create(filepath.Join(o.logDir, name))
	}
	if o.logErr != nil {
		o.lineLocked(fmt.Sprintf("image build: no log file (%v); its output is kept per step only", o.logErr))
		return
	}
	o.logPath = o.log.Name()
	if !o.verbose {
		o.lineLocked("image build: the tools' full output goes to " + o.logPath)
	}
}

// Begin starts a step: name says what it makes ("etcd 3.6 compile").
// Everything written to the step is its output.
func (o *BuildOutput) Begin(name string) *Step {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.openLogLocked()
	s := &Step{out: o, name: name, start: o.now()}
	o.active = append(o.active, s)
	if o.log != nil {
		fmt.Fprintf(o.log, "==> %s: started %s\n", name, s.start.UTC().Format(time.RFC3339))
	}
	if o.verbose {
		o.lineLocked("compose: " + name + " ...")
	}
	o.drawLocked()
	switch {
	case o.ticking:
	case o.tty:
		o.ticking = true
		go o.tick()
	case !o.verbose && o.w != io.Discard:
		o.ticking = true
		go o.beat()
	}
	return s
}

// beat prints, on a writer that is not a terminal, a line naming the steps
// still running every heartbeat, so no compile goes unheard for longer.
func (o *BuildOutput) beat() {
	for {
		time.Sleep(o.heartbeat)
		o.mu.Lock()
		if len(o.active) == 0 {
			o.ticking = false
			o.mu.Unlock()
			return
		}
		o.lineLocked("  … still running: " + o.activeLocked())
		o.mu.Unlock()
	}
}

// activeLocked names the steps under way with their time so far, and the
// last line of the only one.
func (o *BuildOutput) activeLocked() string {
	var parts []string
	for _, s := range o.active {
		p := fmt.Sprintf("%s %s", s.name, formatElapsed(o.now().Sub(s.start)))
		if s.last != "" && len(o.active) == 1 {
			p += ": " + s.last
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

// tick redraws the status line while any step runs, so its clock moves.
func (o *BuildOutput) tick() {
	for {
		time.Sleep(250 * time.Millisecond)
		o.mu.Lock()
		if len(o.active) == 0 {
			o.ticking = false
			o.mu.Unlock()
			return
		}
		o.drawLocked()
		o.mu.Unlock()
	}
}

// drawLocked rewrites the status line (terminals only).
func (o *BuildOutput) drawLocked() {
	if !o.tty || o.verbose {
		return
	}
	status := ""
	if len(o.active) > 0 {
		status = "  … " + o.activeLocked()
		if width, _, err := term.GetSize(int(o.w.(*os.File).Fd())); err == nil && width > 4 && len([]rune(status)) > width-1 {
			status = string([]rune(status)[:width-2]) + "…"
		}
	}
	if status == o.status && status != "" {
		return
	}
	io.WriteString(o.w, "\r\033[K"+status)
	o.status = status
}

// lineLocked prints a line above the status line (and records it).
func (o *BuildOutput) lineLocked(s string) {
	if o.record != nil {
		o.record(s)
	}
	if o.tty && o.status != "" {
		io.WriteString(o.w, "\r\033[K"+s+"\n"+o.status)
		return
	}
	io.WriteString(o.w, s+"\n")
}

func (o *BuildOutput) remove(s *Step) {
	for i, a := range o.active {
		if a == s {
			o.active = append(o.active[:i], o.active[i+1:]...)
			break
		}
	}
}

// ansiColor matches the colour codes the daemon puts around a build
// step's stderr.
var ansiColor = regexp.MustCompile("\x1b\\[[0-9;]*m")

// failTailLines is how many of a failed step's last lines are shown.
const failTailLines = 20

// stepKeptLines is how many of its last lines a step keeps for a failure.
const stepKeptLines = 60

// Step is one step of an image build: a writer for its tools' output.
type Step struct {
	out     *BuildOutput
	name    string
	start   time.Time
	partial lines.Splitter
	lines   []string // the last stepKeptLines whole lines
	last    string   // the last non-empty line, for the status line
	ended   bool
}

// Write takes the step's output: whole lines go to the log, and
// verbose to the writer; the last lines are kept for a failure.
func (s *Step) Write(p []byte) (int, error) {
	o := s.out
	o.mu.Lock()
	defer o.mu.Unlock()
	s.partial.Write(p, func(line string) error {
		s.takeLineLocked(line)
		return nil
	})
	return len(p), nil
}

func (s *Step) takeLineLocked(line string) {
	o := s.out
	line = ansiColor.ReplaceAllString(strings.TrimRight(line, "\r"), "")
	if o.log != nil {
		fmt.Fprintf(o.log, "[%s] %s\n", s.name, line)
	}
	if o.verbose {
		io.WriteString(o.w, line+"\n")
	}
	if len(s.lines) == stepKeptLines {
		s.lines = append(s.lines[:0], s.lines[1:]...)
	}
	s.lines = append(s.lines, line)
	if t := strings.TrimSpace(line); t != "" {
		s.last = t
	}
}

func (s *Step) flushLocked() {
	if line, ok := s.partial.Rest(); ok {
		s.takeLineLocked(line)
	}
}

// Done ends the step: one line with its name, its elapsed time and what
// it made (detail, may be "").
func (s *Step) Done(detail string) {
	o := s.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.flushLocked()
	o.remove(s)
	took := o.now().Sub(s.start)
	line := fmt.Sprintf("  %-44s %6s", s.name, formatElapsed(took))
	if detail != "" {
		line += "  " + detail
	}
	if o.log != nil {
		fmt.Fprintf(o.log, "==> %s: done in %s %s\n", s.name, took.Round(time.Millisecond), detail)
	}
	o.status = "" // the line below replaces it
	if o.tty && !o.verbose {
		io.WriteString(o.w, "\r\033[K")
	}
	o.lineLocked(line)
	o.drawLocked()
}

// Fail ends the step with err: it prints the failing step's name and its
// last lines (and where the whole log is), and returns err naming the step.
// A step cut short by an interrupt prints one line only.
func (s *Step) Fail(err error, interrupted bool) error {
	o := s.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if s.ended {
		return err
	}
	s.ended = true
	s.flushLocked()
	o.remove(s)
	took := o.now().Sub(s.start)
	if o.log != nil {
		fmt.Fprintf(o.log, "==> %s: FAILED after %s: %v\n", s.name, took.Round(time.Millisecond), err)
	}
	o.status = ""
	if o.tty && !o.verbose {
		io.WriteString(o.w, "\r\033[K")
	}
	if interrupted {
		o.lineLocked(fmt.Sprintf("  %-44s %6s  interrupted", s.name, formatElapsed(took)))
		o.drawLocked()
		return err
	}
	msg := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if r := []rune(msg); len(r) > 160 {
		msg = string(r[:160]) + "…"
	}
	o.lineLocked(fmt.Sprintf("  %-44s %6s  FAILED: %s", s.name, formatElapsed(took), msg))
	if !o.verbose {
		o.lineLocked(failureTail(s.name, s.lines, failTailLines, o.logPath))
	}
	o.drawLocked()
	return fmt.Errorf("%s: %w", s.name, err)
}

// failureTail is what a failed step shows in quiet mode: its name and its
// last n lines of output, and the log that has all of it.
func failureTail(name string, lines []string, n int, logPath string) string {
	var b strings.Builder
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	where := ""
	if logPath != "" {
		where = " (all of it: " + logPath + ")"
	}
	if len(lines) == 0 {
		fmt.Fprintf(&b, "step %q failed before printing anything%s", name, where)
		return b.String()
	}
	fmt.Fprintf(&b, "step %q failed; its last %d lines%s:", name, len(lines), where)
	for _, l := range lines {
		b.WriteString("\n    | " + l)
	}
	return b.String()
}

// formatElapsed prints a step's time as people read it: 0.4s, 12s, 1m05s.
func formatElapsed(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	default:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
}
