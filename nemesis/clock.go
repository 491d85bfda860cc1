package nemesis

// The clock faults. Containers share the host's clock, so a clock fault
// cannot set a machine's time: it moves the wall clock of the lock
// service's server processes alone, with Debian's libfaketime preloaded
// into them (libfaketimeMT, the variant for threaded programs).
//
// How: when a clock fault is chosen, Prepare gives every server node a
// file, ClockFile, holding the node's offset ("+0.000" at first), and asks
// the cluster to start the node's servers — the first time and after a
// kill — with
//
//	LD_PRELOAD=libc_malloc_debug.so.0 libfaketimeMT.so.1
//	FAKETIME_TIMESTAMP_FILE=ClockFile  the offset, re-read while running
//	FAKETIME_NO_CACHE=1                read it on every clock call (by
//	                                   default libfaketime caches it ~10 s)
//	DONT_FAKE_MONOTONIC=1              CLOCK_MONOTONIC stays true time
//
// A fault then rewrites the file (atomically, by rename) and the server's
// next reading of its wall clock is moved; healing writes the offset back,
// which is a jump backwards by the same amount. glibc's
// libc_malloc_debug.so.0 comes first because redis-server's jemalloc,
// asked for memory while libfaketime is still initialising, recursed into
// it and crashed; with glibc's malloc hooks library loaded first it does
// not.
//
// Each fault reads the server's own clock (Redis TIME, PostgreSQL
// clock_timestamp(); elsewhere a process started under the same
// preload) before and after it moves it, and writes both to the run's log
// as offsets from the node's true time.
//
// etcd is a static Go binary, which no preload reaches, and times its
// leases on the monotonic clock; the memory backend's server is this
// program, static too. Both are refused before anything starts.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/usage"
)

const (
	clockDir = "/var/lib/fencecheck/clock"
	// ClockFile holds a server node's clock offset for libfaketime, in
	// seconds with a sign ("+6.000", "-1.500", "+0.000").
	ClockFile = clockDir + "/offset"
)

// Clock target sets for --clock-targets.
const (
	TargetsOne      = "one"
	TargetsMinority = "minority"
	TargetsMajority = "majority"
	TargetsAll      = "all"
	TargetsRandom   = "random"
)

var clockTargetSets = []string{TargetsOne, TargetsMinority, TargetsMajority, TargetsAll}

var (
	offsetFlag = usage.Flag{Name: "clock-offset", Usage: "how far a clock fault moves a server's wall clock (e.g. 6s, -4s; default 3 × lease-ttl)",
		Check: func(v string) error { _, err := parseOffset(v); return err }}
	targetsFlag = usage.Flag{Name: "clock-targets", Usage: "which servers clock-jump moves: one, minority, majority, all, or random (drawn each time, the default)",
		Check: func(v string) error {
			if v == "" || v == TargetsRandom || slices.Contains(clockTargetSets, v) {
				return nil
			}
			return fmt.Errorf("%q is no target set (accepted: one, minority, majority, all, random)", v)
		}}
	periodFlag = usage.Flag{Name: "clock-strobe-period", Usage: "how long one forward-and-back cycle of clock-strobe takes (default 200ms)",
		Check: func(v string) error {
			if v == "" {
				return nil
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 10*time.Millisecond {
				return fmt.Errorf("%q is no period of 10ms or more (e.g. 200ms)", v)
			}
			return nil
		}}
)

func init() {
	Register(Kind{Name: "clock-jump", Summary: "jump the wall clock of some servers (--clock-targets) by --clock-offset while a holder's write is under way; heal jumps it back",
		Needs: Needs{Docker: true, Servers: 1, CutsClient: true}, Flags: []usage.Flag{offsetFlag, targetsFlag}, AimsAtHolder: true,
		Check: checkClockJump, Prepare: prepareClock(nil),
		Build: func(_ context.Context, env *Env) (Fault, error) {
			j := &ClockJump{clocks: newClocks(env), Targets: env.Settings.Options[targetsFlag.Name],
				Holder: func(ctx context.Context) string { return env.Holders().Wait(ctx) }}
			if env.Claims != nil {
				j.Aim = &clockAim{holderAim{Claims: env.Claims}, takeoverWait{MaxWait: DurationOfPause(env.Settings)}}
				env.Observe(j.Aim.Observe)
			}
			return j, nil
		}})
	Register(Kind{Name: "clock-skew", Summary: "run the servers with different wall-clock offsets (spread over ± --clock-offset) for the whole run",
		Needs: Needs{Docker: true, Servers: 1}, Flags: []usage.Flag{offsetFlag},
		Check: checkClock, Prepare: prepareClock(skewOffsets),
		Build: func(_ context.Context, env *Env) (Fault, error) { return &ClockSkew{clocks: newClocks(env)}, nil }})
	Register(Kind{Name: "clock-strobe", Summary: "flip one server's wall clock forward by --clock-offset and back, one cycle every --clock-strobe-period, while held",
		Needs: Needs{Docker: true, Servers: 1}, Flags: []usage.Flag{offsetFlag, periodFlag},
		Check: checkClock, Prepare: prepareClock(nil),
		Build: func(_ context.Context, env *Env) (Fault, error) {
			period := 200 * time.Millisecond
			if v := env.Settings.Options[periodFlag.Name]; v != "" {
				period, _ = time.ParseDuration(v)
			}
			return &ClockStrobe{clocks: newClocks(env), Period: period}, nil
		}})
	Register(Kind{Name: "clock-jump-quorum", Summary: "Kleppmann's Redlock case: cut the lock's next holder off from a minority of servers and, while it writes, jump one of its majority's clocks",
		Needs: Needs{Docker: true, Servers: 3, CutsClient: true}, Flags: []usage.Flag{offsetFlag}, AimsAtHolder: true,
		Check: checkClock, Prepare: prepareClock(nil),
		Build: func(_ context.Context, env *Env) (Fault, error) {
			q := &ClockJumpQuorum{clocks: newClocks(env), SlotOf: env.SlotOf, Claims: env.Claims, MaxWait: DurationOfPause(env.Settings)}
			env.Observe(q.Observe)
			return q, nil
		}})
}

// checkClock refuses a backend whose servers libfaketime cannot reach.
func checkClock(s Settings) error {
	if s.NoClockFaults != "" {
		return fmt.Errorf("%s", s.NoClockFaults)
	}
	return nil
}

func checkClockJump(s Settings) error {
	if err := checkClock(s); err != nil {
		return err
	}
	if t := s.Options[targetsFlag.Name]; t == TargetsMinority && s.Docker && s.Servers < 2 {
		return fmt.Errorf("--clock-targets minority: a minority of %d server is nobody (one, majority or all move it)", s.Servers)
	}
	return nil
}

// parseOffset reads --clock-offset: a non-zero duration ("" is the default,
// 0).
func parseOffset(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d == 0 || d.Abs() > 24*time.Hour {
		return 0, fmt.Errorf("%q is no non-zero duration within a day (e.g. 6s, -4s)", v)
	}
	return d, nil
}

// ClockOffset is the run's --clock-offset: by default three lease lengths,
// so that every lease a moved clock times has run out.
func ClockOffset(s Settings) time.Duration {
	if d, _ := parseOffset(s.Options[offsetFlag.Name]); d != 0 {
		return d
	}
	return 3 * s.LeaseTTL
}

// formatOffset writes d as libfaketime reads a relative offset: signed
// seconds.
func formatOffset(d time.Duration) string {
	return fmt.Sprintf("%+.3f", d.Seconds())
}

// skewOffsets spreads ± the offset over n servers: the first is moved
// back by the whole offset, the last forward by it, the others evenly in
// between (one server alone is moved forward).
func skewOffsets(s Settings, n int) []time.Duration {
	off := ClockOffset(s)
	if n == 1 {
		return []time.Duration{off}
	}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = -off + time.Duration(int64(2*off)*int64(i)/int64(n-1))
	}
	return out
}

// standing remembers each cluster's standing offsets (clock-skew's), which
// the other clock faults add to and heal back to.
var standing sync.Map // nodes.Nodes → map[string]time.Duration

func standingOffset(c nodes.Nodes, node string) time.Duration {
	if m, ok := standing.Load(c); ok {
		return m.(map[string]time.Duration)[node]
	}
	return 0
}

// prepareClock installs the offset file in every server node and has the
// cluster start the node's servers under libfaketime. skew, when set,
// gives the servers standing offsets.
func prepareClock(skew func(Settings, int) []time.Duration) func(context.Context, *Env) error {
	return func(ctx context.Context, env *Env) error {
		if env.Cluster == nil {
			return fmt.Errorf("the clock faults need a Docker cluster")
		}
		if skew != nil {
			offsets := skew(env.Settings, len(env.ServerNodes))
			m := map[string]time.Duration{}
			for i, n := range env.ServerNodes {
				m[n] = offsets[i]
			}
			standing.Store(env.Cluster, m)
		}
		return eachNode(env.ServerNodes, func(n string) error {
			off := formatOffset(standingOffset(env.Cluster, n))
			out, err := script(ctx, env.Cluster, n, prepareScript(off))
			if err != nil {
				return fmt.Errorf("installing libfaketime's offset file in %s: %w", n, err)
			}
			lines := strings.Fields(out)
			if len(lines) != 2 {
				return fmt.Errorf("%s: could not find libfaketimeMT.so.1 and libc_malloc_debug.so.0 (found %q); the node image needs Debian's libfaketime: rebuild it with check image build", n, out)
			}
			env.Cluster.SetServerEnv(n, []string{
				"LD_PRELOAD=" + lines[1] + " " + lines[0],
				"FAKETIME_TIMESTAMP_FILE=" + ClockFile,
				"FAKETIME_NO_CACHE=1",
				"DONT_FAKE_MONOTONIC=1",
			})
			env.logf("clock: %s's servers start under libfaketime, wall clock offset %s s (file %s), monotonic clock true", n, off, ClockFile)
			return nil
		})
	}
}

// prepareScript writes the first offset and prints the two libraries'
// paths, libfaketimeMT first.
func prepareScript(offset string) string {
	return fmt.Sprintf(`set -e
mkdir -p %[1]s && chmod 0755 %[1]s
printf '%%s' %[2]s > %[3]s.tmp && chmod 0644 %[3]s.tmp && mv %[3]s.tmp %[3]s
ls /usr/lib/*/faketime/libfaketimeMT.so.1 | head -n 1
ls /usr/lib/*/libc_malloc_debug.so.0 /lib/*/libc_malloc_debug.so.0 2>/dev/null | head -n 1`, clockDir, shellQuote(offset), ClockFile)
}

// pickTargets draws the servers a clock-jump moves.
func pickTargets(rng *rand.Rand, servers []string, set string) []string {
	if set == "" || set == TargetsRandom {
		set = clockTargetSets[rng.IntN(len(clockTargetSets))]
	}
	n := len(servers)
	k := map[string]int{TargetsOne: 1, TargetsMinority: (n - 1) / 2, TargetsMajority: n/2 + 1, TargetsAll: n}[set]
	k = max(k, 1)
	nodes := slices.Clone(servers)
	rng.Shuffle(n, func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	out := nodes[:k]
	slices.Sort(out)
	return out
}

// clockLabels names moved nodes with their offset for the history ("n1
// clock +6.000 s").
func clockLabels(nodes []string, by time.Duration) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("%s clock %s s", n, formatOffset(by)))
	}
	return out
}

// ClockJump moves some servers' wall clocks forward (or back) by the
// offset until Stop, which jumps them back to true time. It aims, as
// pause-holder does: it reads the clocks, waits until a client holds the
// lock, and jumps then. A jump between two holds moves only the clock
// that times the next lease from its start, and proves nothing; a jump
// inside a hold makes the holder's lease expire early on the moved
// servers while the holder still believes in it.
type ClockJump struct {
	*clocks
	// Targets is the --clock-targets set ("" draws one each time).
	Targets string
	// Holder waits for the slot of a client holding a lease now; ""
	// when ctx ends first. Used when Aim is nil.
	Holder func(ctx context.Context) string
	// Aim, when set, makes the jump at a holder's write failpoint.
	Aim *clockAim
}

func (j *ClockJump) Name() string { return "clock-jump" }

func (j *ClockJump) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	nodes := pickTargets(rng, j.servers, j.Targets)
	before := j.readAll(ctx, nodes)
	if j.Aim != nil {
		jumped, err := j.Aim.at(ctx, func() error { return j.move(ctx, j.Name(), nodes, before) })
		if err != nil || !jumped {
			return nil, err
		}
		return clockLabels(nodes, j.offset), nil
	}
	if j.Holder != nil && j.Holder(ctx) == "" {
		return nil, nil
	}
	if err := j.move(ctx, j.Name(), nodes, before); err != nil {
		return nil, err
	}
	return clockLabels(nodes, j.offset), nil
}

func (j *ClockJump) Stop(ctx context.Context) error { return j.restore(ctx, j.Name()) }

// ClockSkew is the standing skew Prepare put in place for the whole run:
// Start reads the clocks again and names the offsets, Stop leaves them.
type ClockSkew struct{ *clocks }

func (s *ClockSkew) Name() string { return "clock-skew" }

func (s *ClockSkew) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	var out []string
	read := s.readAll(ctx, s.servers)
	for _, n := range s.servers {
		off := standingOffset(s.cluster, n)
		s.log("clock-skew: %s's standing offset %s s: server clock %s", n, formatOffset(off), read[n])
		out = append(out, fmt.Sprintf("%s clock %s s", n, formatOffset(off)))
	}
	return out, nil
}

// Stop leaves the skew: it is the run's condition, not an event.
func (s *ClockSkew) Stop(context.Context) error { return nil }

// strobePid is where a strobe loop's pid is kept in its node.
const strobePid = clockDir + "/strobe.pid"

// ClockStrobe flips one server's wall clock between its standing offset
// and the offset added, every Period, until Stop. The loop runs inside the
// node (a shell, not under libfaketime), so each flip costs no exec.
type ClockStrobe struct {
	*clocks
	Period time.Duration
}

func (s *ClockStrobe) Name() string { return "clock-strobe" }

func (s *ClockStrobe) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	node := s.servers[rng.IntN(len(s.servers))]
	base := standingOffset(s.cluster, node)
	s.mu.Lock()
	s.moved = appendOnce(s.moved, node)
	s.mu.Unlock()
	half := fmt.Sprintf("%.3f", s.Period.Seconds()/2)
	loop := fmt.Sprintf(`echo $$ > %[1]s; while :; do printf '%%s' %[2]s > %[3]s.tmp && mv %[3]s.tmp %[3]s; sleep %[5]s; printf '%%s' %[4]s > %[3]s.tmp && mv %[3]s.tmp %[3]s; sleep %[5]s; done`,
		strobePid, shellQuote(formatOffset(base+s.offset)), ClockFile, shellQuote(formatOffset(base)), half)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	before := s.read(sctx, node)
	if _, err := s.cluster.ExecDetached(sctx, node, []string{"sh", "-c", loop}, nodes.ExecOptions{}); err != nil {
		return nil, fmt.Errorf("clock-strobe: starting the strobe in %s: %w", node, err)
	}
	var seen []string
	for range 4 {
		seen = append(seen, s.read(sctx, node))
	}
	s.log("clock-strobe: %s's clock flips between %s and %s s every %s: server clock %s before; then %s", node,
		formatOffset(base), formatOffset(base+s.offset), s.Period/2, before, strings.Join(seen, "; "))
	return []string{fmt.Sprintf("%s clock %s/%s s every %s", node, formatOffset(base), formatOffset(base+s.offset), s.Period/2)}, nil
}

// Stop ends the loop, then puts the clock back.
func (s *ClockStrobe) Stop(ctx context.Context) error {
	s.mu.Lock()
	nodes := slices.Clone(s.moved)
	s.mu.Unlock()
	err := eachNode(nodes, func(n string) error {
		_, err := scriptPatiently(ctx, s.cluster, n, fmt.Sprintf("if [ -f %[1]s ]; then kill $(cat %[1]s) 2>/dev/null; rm -f %[1]s; fi; true", strobePid), healPatience)
		return err
	})
	if err != nil {
		return fmt.Errorf("clock-strobe: stopping the strobe: %w", err)
	}
	return s.restore(ctx, s.Name())
}
