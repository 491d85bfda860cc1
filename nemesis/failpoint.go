package nemesis

// The failpoint fault: a lock server's own code made to panic or sleep at
// a named place — before the raft log is saved, in the middle of a
// defragmentation or a compaction — as etcd's robustness tests do with
// gofail. A kill strikes at a random instruction; a failpoint strikes
// where a bug lives, on the release that has it.
//
// The servers run their backend's failpoint build (Needs.Failpoints; the
// backend describes it, registry.Info.Failpoints), which serves gofail's
// HTTP endpoint on Settings.FailpointPort in every server node. The fault
// arms --failpoint NAME=ACTION there (PUT /NAME), on one server, the
// leader or every server (--failpoint-target), either on the nemesis
// schedule or at a holder just granted the lock (--failpoint-when grant:
// stopped after its read under the lock, before its write, until the
// failpoint is armed — holderAim, as pause-holder aims). Its heal disarms what still runs (DELETE
// /NAME) and starts again every server the failpoint took down — Kill's
// restart — after dropping what its data directory never fsynced when
// --failpoint-crash power-loss asks (the power faults' layer, power.go),
// as etcd's robustness tests follow a panic with lazyfs's clear-cache.
//
// The endpoint is reached from inside the node, on its loopback, as every
// other question to a server is (an exec: a remote Docker engine works as
// a local one).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// FailpointList is the --failpoint value that lists the failpoints of the
// chosen release instead of running a test.
const FailpointList = "list"

// The --failpoint-target, --failpoint-when and --failpoint-crash words.
const (
	FailpointOne    = "one"
	FailpointLeader = "leader"
	FailpointAll    = "all"

	FailpointOnSchedule = "schedule"
	FailpointOnGrant    = "grant"

	FailpointRestart   = "restart"
	FailpointPowerLoss = "power-loss"
)

// FailpointFlag is --failpoint: NAME=ACTION, or list.
var FailpointFlag = usage.Flag{Name: "failpoint",
	Usage: "with --nemesis failpoint, the failpoint to arm and what it does, NAME=ACTION as gofail spells it (raftBeforeSave=panic, defragBeforeCopy=sleep(2000), raftBeforeSave=1*panic); " +
		"`list` prints the failpoints of --backend and --server-version and exits 0",
	Check: func(v string) error {
		if v == "" || v == FailpointList {
			return nil
		}
		_, _, err := ParseFailpoint(v)
		return err
	}}

var (
	failpointTargetFlag = usage.Flag{Name: "failpoint-target",
		Usage: "which servers the failpoint fault arms: one (a random server, the default), leader (the one that leads then) or all",
		Check: wordIn(FailpointOne, FailpointLeader, FailpointAll)}
	failpointWhenFlag = usage.Flag{Name: "failpoint-when",
		Usage: "when the failpoint fault arms: schedule (on the nemesis schedule, the default) or grant (at a holder granted the lock and stopped after its read under it, before its write, so its write is the next the servers take)",
		Check: wordIn(FailpointOnSchedule, FailpointOnGrant)}
	failpointCrashFlag = usage.Flag{Name: "failpoint-crash",
		Usage: "what a server the failpoint took down loses before it starts again: restart (nothing: a process crash, the default) or power-loss (what its data directory never fsynced, through the power faults' filesystem layer)",
		Check: wordIn(FailpointRestart, FailpointPowerLoss)}
)

// wordIn checks a flag's value is "" or one of words.
func wordIn(words ...string) func(string) error {
	return func(v string) error {
		if v == "" || slices.Contains(words, v) {
			return nil
		}
		return fmt.Errorf("%q is not accepted (accepted: %s)", v, strings.Join(words, ", "))
	}
}

func init() {
	Register(Kind{Name: "failpoint",
		Summary: "arm a failpoint in the servers' own code (--failpoint NAME=ACTION, gofail's: panic, sleep(ms)); heal: disarm it, start again a server it took down",
		Needs:   Needs{Docker: true, Servers: 1, Failpoints: true},
		Flags:   []usage.Flag{FailpointFlag, failpointTargetFlag, failpointWhenFlag, failpointCrashFlag},
		Check:   checkFailpoint,
		Prepare: func(ctx context.Context, env *Env) error {
			if env.Settings.Options[failpointCrashFlag.Name] != FailpointPowerLoss {
				return nil
			}
			return preparePower(ctx, env)
		},
		Build: func(_ context.Context, env *Env) (Fault, error) {
			s := env.Settings
			name, action, err := ParseFailpoint(s.Options[FailpointFlag.Name])
			if err != nil {
				return nil, err
			}
			f := &Failpoint{Point: name, Action: action, Port: s.FailpointPort, Cluster: env.Cluster, DB: env.DB,
				Targets: env.AllServers, log: env.logf}
			switch s.Options[failpointTargetFlag.Name] {
			case FailpointLeader:
				f.Targets = env.Leader
			case FailpointAll:
				f.All = true
			}
			if s.Options[failpointWhenFlag.Name] == FailpointOnGrant {
				f.aim = &holderAim{Claims: env.Claims}
				env.Observe(f.aim.Observe)
			}
			if s.Options[failpointCrashFlag.Name] == FailpointPowerLoss {
				f.cut = &PowerCut{Label: "failpoint", Cluster: env.Cluster, DB: env.DB, Dir: s.DataDir, Out: env.logf}
			}
			return f, nil
		}})
}

// checkFailpoint refuses a failpoint fault without --failpoint, with a
// name the servers' build does not have, or a power-loss crash on
// servers that keep nothing on disk. Its errors name the flag.
func checkFailpoint(s Settings) error {
	v := s.Options[FailpointFlag.Name]
	switch v {
	case "":
		return usage.Errorf(FailpointFlag.Name, "the failpoint fault needs --failpoint NAME=ACTION, e.g. --failpoint raftBeforeSave=panic (--failpoint list names the failpoints of --server-version)")
	case FailpointList:
		return usage.Errorf(FailpointFlag.Name, "list prints the failpoints and runs nothing: drop --nemesis failpoint to list them, or give --failpoint NAME=ACTION to run")
	}
	name, _, err := ParseFailpoint(v)
	if err != nil {
		return usage.Errorf(FailpointFlag.Name, "%v", err)
	}
	if s.Docker && len(s.Failpoints) > 0 && !slices.Contains(s.Failpoints, name) {
		return usage.Errorf(FailpointFlag.Name, "the servers' build has no failpoint %q (accepted: %s)", name, strings.Join(s.Failpoints, ", "))
	}
	if s.Options[failpointCrashFlag.Name] == FailpointPowerLoss {
		if err := checkPower(s); err != nil {
			return usage.Errorf(failpointCrashFlag.Name, "%v", err)
		}
	}
	return nil
}

// ParseFailpoint splits --failpoint's NAME=ACTION and checks both: the
// name is an identifier, the action a chain of gofail's terms
// (CheckFailpointAction).
func ParseFailpoint(v string) (name, action string, err error) {
	name, action, ok := strings.Cut(v, "=")
	if !ok {
		return "", "", fmt.Errorf("%q is not NAME=ACTION (e.g. raftBeforeSave=panic, or list)", v)
	}
	if !failpointName.MatchString(name) {
		return "", "", fmt.Errorf("%q is not a failpoint name (a Go identifier, e.g. raftBeforeSave)", name)
	}
	if err := CheckFailpointAction(action); err != nil {
		return "", "", err
	}
	return name, action, nil
}

var failpointName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// failpointTasks are gofail's tasks, and whether each takes an argument:
// sleep must be told how long (milliseconds, or a Go duration in quotes).
var failpointTasks = map[string]struct{ arg, needsArg bool }{
	"off":    {},
	"break":  {},
	"panic":  {arg: true},
	"print":  {arg: true},
	"return": {arg: true},
	"sleep":  {arg: true, needsArg: true},
}

// failpointTerm is one of gofail's terms: [P%][N*]TASK[(ARG)], ARG an
// integer, a quoted string or true/false.
var failpointTerm = regexp.MustCompile(`^((?:[0-9]+(?:\.[0-9]*)?%|[0-9]+\*)*)([a-z]+)(\((?:-?[0-9]+|"(?:[^"\\]|\\.)*"|true|false)\))?$`)

// CheckFailpointAction checks an action as gofail's runtime parses it: one
// or more terms joined by "->" (the first whose modifiers allow it runs),
// each [P%][N*]TASK[(ARG)] — 50%panic, 1*panic, sleep(100),
// sleep("1s"), return("err"), off. An error names what is wrong and
// what is accepted.
func CheckFailpointAction(action string) error {
	if action == "" {
		return fmt.Errorf("no action after = (e.g. panic, sleep(100), 1*panic)")
	}
	for _, t := range strings.Split(action, "->") {
		m := failpointTerm.FindStringSubmatch(t)
		if m == nil {
			return fmt.Errorf("action %q: %q is not a gofail term [P%%][N*]TASK[(ARG)] (e.g. panic, sleep(100), 1*panic, 50%%panic)", action, t)
		}
		task, arg := m[2], m[3]
		spec, ok := failpointTasks[task]
		if !ok {
			return fmt.Errorf("action %q: unknown task %q (accepted: break, off, panic, print, return, sleep)", action, task)
		}
		if arg != "" && !spec.arg {
			return fmt.Errorf("action %q: %s takes no argument", action, task)
		}
		if arg == "" && spec.needsArg {
			return fmt.Errorf("action %q: %s needs how long, in milliseconds or as a quoted duration: sleep(100), sleep(\"1s\")", action, task)
		}
		if task == "sleep" && !strings.HasPrefix(arg, `("`) {
			if n, err := strconv.Atoi(strings.Trim(arg, "()")); err != nil || n < 0 {
				return fmt.Errorf("action %q: sleep takes milliseconds (sleep(100)) or a quoted duration (sleep(\"1s\"))", action)
			}
		}
		if task == "sleep" && strings.HasPrefix(arg, `("`) {
			if _, err := time.ParseDuration(strings.Trim(arg, `()"`)); err != nil {
				return fmt.Errorf("action %q: %s is not a duration (e.g. sleep(\"1s\"))", action, strings.Trim(arg, "()"))
			}
		}
	}
	return nil
}

// Failpoint arms one failpoint in the servers' code and heals what it did.
type Failpoint struct {
	// Point and Action are --failpoint's NAME and ACTION.
	Point, Action string
	// Port is the failpoints' endpoint in each node.
	Port    int
	Cluster nodes.Nodes
	DB      Servers
	// Targets lists the servers one may be drawn from (every server, or
	// the leader alone); All arms every one of them.
	Targets func(ctx context.Context) ([]string, error)
	All     bool

	aim *holderAim // --failpoint-when grant; nil on the schedule
	cut *PowerCut  // --failpoint-crash power-loss; nil: a restart
	log func(format string, args ...any)

	mu    sync.Mutex
	armed []string // the nodes armed and not healed yet
}

func (f *Failpoint) Name() string { return "failpoint" }

func (f *Failpoint) logf(format string, args ...any) {
	if f.log != nil {
		f.log(format, args...)
	}
}

// Start arms the failpoint on its targets: now, or (--failpoint-when
// grant) at a holder granted the lock and stopped at its write-checked
// failpoint after its read under it (holderAim, as pause-holder aims),
// let go once the failpoint is armed, so that the holder's write is the
// next write the servers take.
func (f *Failpoint) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	if f.aim == nil {
		return f.arm(ctx, rng)
	}
	var ts []string
	done, err := f.aim.at(ctx, func(process int) error {
		var err error
		ts, err = f.arm(ctx, rng)
		if err == nil && len(ts) > 0 {
			f.logf("failpoint: armed while process %d, granted the lock, waited to write", process)
		}
		return err
	})
	if !done {
		return nil, err
	}
	return ts, err
}

// arm arms the failpoint on its targets now.
func (f *Failpoint) arm(ctx context.Context, rng *rand.Rand) ([]string, error) {
	var ts []string
	if f.All {
		all, err := f.Targets(ctx)
		if len(all) == 0 {
			return nil, err
		}
		ts = all
	} else {
		t, err := drawTarget(ctx, f.Targets, rng)
		if t == "" {
			return nil, err
		}
		ts = []string{t}
	}
	// Like a kill, arming runs to its end even on an interrupt: the heal
	// must know which servers it armed.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := eachNode(ts, func(n string) error {
		f.mu.Lock()
		f.armed = appendOnce(f.armed, n)
		f.mu.Unlock()
		status, body, err := f.request(actx, n, "PUT", f.Action)
		if err != nil {
			return fmt.Errorf("failpoint: arming %s in %s: %w", f.Point, n, err)
		}
		if status != 204 && status != 200 {
			return fmt.Errorf("failpoint: arming %s=%s in %s: the endpoint answered %d %s", f.Point, f.Action, n, status, strings.TrimSpace(body))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.logf("failpoint: %s=%s armed in %s", f.Point, f.Action, strings.Join(ts, ", "))
	return ts, nil
}

// Hold keeps the failpoint armed for at most max, and ends it a moment
// after a server it armed went down (its endpoint stopped answering), so
// the heal starts it again without waiting out the fault's duration.
func (f *Failpoint) Hold(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if !sleep(ctx, min(500*time.Millisecond, time.Until(deadline))) {
			return
		}
		f.mu.Lock()
		armed := slices.Clone(f.armed)
		f.mu.Unlock()
		for _, n := range armed {
			if !f.answers(ctx, n) {
				sleep(ctx, min(crashGrace, time.Until(deadline)))
				return
			}
		}
	}
}

// crashGrace is how long a server that went down stays down before the
// heal starts it again: long enough for its peers and clients to notice.
const crashGrace = time.Second

// Stop disarms the failpoint where its server still runs and starts again
// every server it took down. Servers it could not heal stay on its list.
func (f *Failpoint) Stop(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	left, err := healEach(f.armed, eachNode, func(n string) error { return f.heal(ctx, n) })
	f.armed = left
	return err
}

// heal disarms the failpoint in node; if its server no longer answers
// (the failpoint took it down) it SIGKILLs whatever is left of it, drops
// what it never synced (--failpoint-crash power-loss) and starts it again.
func (f *Failpoint) heal(ctx context.Context, node string) error {
	status, body, err := f.request(ctx, node, "DELETE", "")
	if err == nil {
		if status != 204 && status != 200 {
			f.logf("failpoint: disarming %s in %s: the endpoint answered %d %s", f.Point, node, status, strings.TrimSpace(body))
		}
		return nil
	}
	f.logf("failpoint: %s's server went down under %s=%s (%v); starting it again", node, f.Point, f.Action, err)
	if err := f.DB.Kill(ctx, f.Cluster, node); err != nil {
		return fmt.Errorf("failpoint: making sure the server in %s is gone: %w", node, err)
	}
	if f.cut != nil {
		// No torn writes here: the seed draws nothing.
		d, err := f.cut.finish(ctx, node, 0)
		if err != nil {
			return fmt.Errorf("failpoint: %w", err)
		}
		f.logf("failpoint: %s lost what it never synced: %d files, %d KiB of pages", node, d.Files, d.Bytes/1024)
	}
	k := &Kill{Label: "failpoint", Cluster: f.Cluster, DB: f.DB}
	if err := k.restart(ctx, node); err != nil {
		return fmt.Errorf("failpoint: restarting the server in %s: %w", node, err)
	}
	return nil
}

// answers says whether node's failpoint endpoint answers (its server
// runs).
func (f *Failpoint) answers(ctx context.Context, node string) bool {
	_, _, err := f.request(ctx, node, "GET", "")
	return err == nil
}

// request sends method /Point with body to the failpoint endpoint in node,
// from inside the node, over HTTP/1.0 by bash (the node image has no
// curl), and returns the answer's status and body. An error is an
// endpoint that did not answer: its server is down, or Docker could not
// reach the node.
func (f *Failpoint) request(ctx context.Context, node, method, body string) (int, string, error) {
	req := fmt.Sprintf("%s /%s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", method, f.Point, len(body), body)
	text := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf '%%s' %s >&3 && timeout 3 cat <&3`, f.Port, shellQuote(req))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := f.Cluster.Exec(ctx, node, []string{"bash", "-c", text})
	if err != nil {
		return 0, "", err
	}
	if res.ExitCode != 0 {
		if strings.Contains(res.Stderr, "Connection refused") {
			return 0, "", fmt.Errorf("its failpoint endpoint (port %d) refused the connection", f.Port)
		}
		return 0, "", fmt.Errorf("its failpoint endpoint (port %d) did not answer: %s", f.Port, strings.Join(strings.Fields(res.Stderr), " "))
	}
	return parseHTTPAnswer(res.Stdout)
}

// parseHTTPAnswer reads a raw HTTP/1.x answer's status and body.
func parseHTTPAnswer(answer string) (int, string, error) {
	head, body, _ := strings.Cut(answer, "\r\n\r\n")
	status, _, _ := strings.Cut(head, "\r\n")
	fields := strings.Fields(status)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/1.") {
		return 0, "", fmt.Errorf("the endpoint answered %q", answer)
	}
	code, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, "", fmt.Errorf("the endpoint answered %q", status)
	}
	return code, body, nil
}
