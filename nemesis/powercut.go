package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/nemesis/lossyfs"
)

// PowerCut is a power fault: it cuts the power of its targets, at the
// schedule's moment or at one it aims at (--power-at), and starts their
// servers again on Stop.
//
// A cut, in each target (the layer's two steps: lossyfs/cut.go):
//
//  1. silent (--power-silent): the node's network drops first, so its
//     peers and clients see silence, as after a real cut, not the resets
//     a killed process's sockets send;
//  2. the freeze: the node's layer holds every call that would change the
//     disk below and SIGKILLs every process holding a file in the data
//     directory. Every target's layer is armed with one instant, so a cut
//     of several nodes is one moment for all (the containers share the
//     host's clock), not a stagger of execs; an aimed cut arms each
//     layer with the sync it waits for instead;
//  3. the server's kill (the backend's own, for a server that held no
//     file), then the drop: what was never synced is lost, with what
//     --power-torn keeps.
//
// The fault's start is recorded (Announcer) before step 1.
type PowerCut struct {
	Label   string
	Cluster nodes.Nodes
	DB      Servers
	// Targets lists the nodes that may be cut now.
	Targets func(ctx context.Context) ([]string, error)
	Pick    powerPick
	At      powerAt
	// Log is the glob naming the files whose syncs an aimed cut counts.
	Log    string
	Torn   lossyfs.Torn
	Silent bool
	// Dir is the data directory the layer is mounted over.
	Dir string
	Out func(format string, args ...any)

	// grants carries the acknowledged grants while wantGrant is set.
	wantGrant atomic.Bool
	grants    chan history.Event
	// margin is how far ahead an instant is set: enough for every
	// node's arm to land before it (doubled when one did not).
	margin time.Duration

	mu       sync.Mutex
	killed   []string
	silenced []string
	drops    []CutDrop // what each cut made dropped (Drops)
}

// powerPick is which targets a cut takes.
type powerPick int

const (
	pickOne powerPick = iota
	pickMajority
	pickAll
)

func newPowerCut(label string, env *Env, targets func(context.Context) ([]string, error), pick powerPick) (*PowerCut, error) {
	s := env.Settings
	at, err := parsePowerAt(s.Options["power-at"])
	if err != nil {
		return nil, err
	}
	torn, err := lossyfs.ParseTorn(s.Options["power-torn"])
	if err != nil {
		return nil, err
	}
	log := s.Options["power-log"]
	if log == "" {
		log = s.DataLog
	}
	p := &PowerCut{Label: label, Cluster: env.Cluster, DB: env.DB, Targets: targets, Pick: pick, At: at, Log: log,
		Torn: torn, Silent: s.Options["power-silent"] == "true", Dir: s.DataDir, Out: env.logf,
		grants: make(chan history.Event, 1), margin: 300 * time.Millisecond}
	if at.grant && env.Observe != nil {
		env.Observe(p.observe)
	}
	return p, nil
}

func (p *PowerCut) Name() string { return p.Label }

// observe hands the first acknowledged grant to a cut waiting for one; it
// never blocks.
func (p *PowerCut) observe(e history.Event) {
	if e.IsNemesis() || e.F != history.Acquire || e.Type != history.OK || !p.wantGrant.Load() {
		return
	}
	select {
	case p.grants <- e:
	default:
	}
}

func (p *PowerCut) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	return p.StartAnnounced(ctx, rng, func([]string) {})
}

// pick draws the nodes this cut takes.
func (p *PowerCut) pick(ctx context.Context, rng *rand.Rand) ([]string, error) {
	all, err := p.Targets(ctx)
	if len(all) == 0 {
		return nil, err
	}
	switch p.Pick {
	case pickAll:
		return all, nil
	case pickMajority:
		n := len(all)/2 + 1
		if n >= len(all) {
			return nil, fmt.Errorf("%s: a majority of %s is all of them", p.Label, words.Plural(len(all), "server"))
		}
		ts := slices.Clone(all)
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		ts = ts[:n]
		slices.Sort(ts)
		return ts, nil
	}
	return []string{all[rng.IntN(len(all))]}, nil
}

func (p *PowerCut) StartAnnounced(ctx context.Context, rng *rand.Rand, announce func([]string)) ([]string, error) {
	ts, err := p.pick(ctx, rng)
	if len(ts) == 0 {
		return nil, err
	}
	// Every draw is made before anything waits, so a seed repeats them
	// whatever the service does.
	seeds := map[string]uint64{}
	for _, n := range ts {
		seeds[n] = rng.Uint64()
	}
	if p.At.grant {
		g, ok := p.awaitGrant(ctx)
		if !ok {
			return nil, nil
		}
		p.Out("%s: process %d was granted %s at its ack; cutting %s before the next sync of %s", p.Label, g.Process, g.Key, words.List(ts), p.Log)
	}
	// The start is recorded before anything is done to a node.
	announce(ts)
	// Every step runs to its end even on an interrupt: Docker cannot stop
	// an exec half-way, and Stop must know what was done.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	p.mu.Lock()
	p.killed = appendOnce(p.killed, ts...)
	p.mu.Unlock()
	start := time.Now()
	if p.Silent {
		p.mu.Lock()
		p.silenced = appendOnce(p.silenced, ts...)
		p.mu.Unlock()
		if err := eachNode(ts, func(n string) error { return p.silence(kctx, n) }); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Label, err)
		}
	}
	freezes, err := p.freeze(kctx, ts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Label, err)
	}
	p.report(ts, start, freezes)
	cut := CutDrop{Fault: p.Label, Nodes: append([]string(nil), ts...)}
	for _, f := range freezes {
		if at := time.Unix(0, f.AtNano); f.AtNano != 0 && at.After(cut.Went) {
			cut.Went = at
		}
	}
	err = eachNode(ts, func(n string) error {
		if err := p.DB.Kill(kctx, p.Cluster, n); err != nil {
			return fmt.Errorf("killing the server in %s: %w", n, err)
		}
		d, err := p.finish(kctx, n, seeds[n])
		if err != nil {
			return err
		}
		kept := ""
		if p.Torn != lossyfs.TornNone {
			kept = fmt.Sprintf(", %d bytes of unsynced writes kept (%s)", d.Kept, p.Torn)
		}
		if d.Names > 0 {
			kept += fmt.Sprintf(", %d directory changes never fsynced undone", d.Names)
		}
		p.Out("%s: %s lost what it never synced: %d files, %d KiB of pages%s", p.Label, n, d.Files, d.Bytes/1024, kept)
		p.mu.Lock()
		cut.Files += d.Files
		cut.Bytes += d.Bytes
		p.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Label, err)
	}
	p.mu.Lock()
	p.drops = append(p.drops, cut)
	p.mu.Unlock()
	return ts, nil
}

// awaitGrant waits for the next acquire acknowledged from now.
func (p *PowerCut) awaitGrant(ctx context.Context) (history.Event, bool) {
	select {
	case <-p.grants:
	default:
	}
	p.wantGrant.Store(true)
	defer p.wantGrant.Store(false)
	select {
	case g := <-p.grants:
		return g, true
	case <-ctx.Done():
		return history.Event{}, false
	}
}

// trigger is what each target's layer is armed with: the sync an aimed
// cut waits for, or one instant for all.
func (p *PowerCut) trigger() lossyfs.Trigger {
	switch {
	case p.At.grant:
		return lossyfs.Trigger{Sync: p.Log, N: 1}
	case p.At.n > 0:
		return lossyfs.Trigger{Sync: p.Log, N: p.At.n, After: p.At.after}
	}
	return lossyfs.Trigger{At: time.Now().Add(p.margin)}
}

// freeze arms every target's layer and waits for each to freeze. An
// aimed trigger that does not come within its patience is given up, and
// the node cut on command there (said in the run's log).
func (p *PowerCut) freeze(ctx context.Context, ts []string) (map[string]lossyfs.Freeze, error) {
	if len(ts) == 1 && !p.At.aimed() {
		// One node at the schedule's moment: the cut itself freezes.
		return nil, nil
	}
	t := p.trigger()
	patience := 10 * time.Second
	if !t.At.IsZero() {
		patience = time.Until(t.At) + 10*time.Second
	}
	var mu sync.Mutex
	out := map[string]lossyfs.Freeze{}
	err := eachNode(ts, func(n string) error {
		text := fmt.Sprintf("%[1]s lossyfs arm %[2]s && %[1]s lossyfs wait timeout=%[3]s", shellQuote(nodes.BinaryPath), shellQuoteWords(t.String()), patience)
		out1, err := script(ctx, p.Cluster, n, text)
		if err != nil {
			if t.Sync != "" && strings.Contains(err.Error(), "did not come") {
				p.Out("%s: %s's trigger (%s) did not come within %s; cutting it on command", p.Label, n, t, patience)
				script(ctx, p.Cluster, n, shellQuote(nodes.BinaryPath)+" lossyfs disarm")
				return nil
			}
			return fmt.Errorf("arming %s's cut (%s): %w", n, t, err)
		}
		a, err := answer(out1)
		if err != nil || a.Freeze == nil {
			return fmt.Errorf("arming %s's cut: the layer answered %q", n, strings.TrimSpace(out1))
		}
		mu.Lock()
		out[n] = *a.Freeze
		mu.Unlock()
		return nil
	})
	if !t.At.IsZero() {
		for _, f := range out {
			if late := time.Unix(0, f.AtNano).Sub(t.At); late > 50*time.Millisecond {
				p.margin = min(2*p.margin, 5*time.Second)
				p.Out("%s: an arm landed %s after the instant; the next instant is set %s ahead", p.Label, late.Round(time.Millisecond), p.margin)
				break
			}
		}
	}
	return out, err
}

// report writes when and why each node froze, and how far apart.
func (p *PowerCut) report(ts []string, start time.Time, fs map[string]lossyfs.Freeze) {
	if len(fs) == 0 {
		return
	}
	var first, last time.Time
	for _, n := range ts {
		f, ok := fs[n]
		if !ok {
			continue
		}
		at := time.Unix(0, f.AtNano)
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
		p.Out("%s: %s's power went %s after the fault's start, %s (killed %v)", p.Label, n, at.Sub(start).Round(time.Millisecond), f.Why, f.Killed)
	}
	if len(fs) > 1 {
		p.Out("%s: the cuts of %s lay %s apart", p.Label, words.List(ts), last.Sub(first).Round(time.Microsecond))
	}
}

// finish has node's layer finish the cut: the server and any process of
// it that outlived its kill dead (a power cut leaves no stragglers), then
// what was never synced dropped. It returns what was dropped.
func (p *PowerCut) finish(ctx context.Context, node string, seed uint64) (lossyfs.Dropped, error) {
	cmd := fmt.Sprintf("%s lossyfs cut seed=%d", shellQuote(nodes.BinaryPath), seed)
	if p.Torn != lossyfs.TornNone {
		cmd += " torn=" + string(p.Torn)
	}
	out, err := script(ctx, p.Cluster, node, cmd)
	if err != nil {
		return lossyfs.Dropped{}, fmt.Errorf("dropping what %s never synced: %w", node, err)
	}
	a, err := answer(out)
	if err != nil || a.Dropped == nil {
		return lossyfs.Dropped{}, fmt.Errorf("dropping what %s never synced: the layer answered %q", node, strings.TrimSpace(out))
	}
	return *a.Dropped, nil
}

// answer is the layer's answer to the last command out is the output
// of (one JSON line per command).
func answer(out string) (lossyfs.Answer, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var a lossyfs.Answer
	err := json.Unmarshal([]byte(lines[len(lines)-1]), &a)
	return a, err
}

// silentRules drop every packet in and out of a node but its loopback's:
// the first rules of INPUT and OUTPUT, so no partition's chain sees them.
const silentRules = `for c in "INPUT -i" "OUTPUT -o"; do set -- $c; %s -w -C $1 ! $2 lo -j DROP 2>/dev/null || %[1]s -w -I $1 1 ! $2 lo -j DROP || exit 1; done`

// silence drops node's network: a powered-off machine answers nothing.
func (p *PowerCut) silence(ctx context.Context, node string) error {
	if _, err := script(ctx, p.Cluster, node, fmt.Sprintf(silentRules, "iptables")); err != nil {
		return fmt.Errorf("dropping %s's network before its cut: %w", node, err)
	}
	return nil
}

// unsilence brings node's network back.
func (p *PowerCut) unsilence(ctx context.Context, node string) error {
	_, err := scriptPatiently(ctx, p.Cluster, node, `while iptables -w -D INPUT ! -i lo -j DROP 2>/dev/null; do :; done; while iptables -w -D OUTPUT ! -o lo -j DROP 2>/dev/null; do :; done; true`, healPatience)
	return err
}

// Stop brings the power back: each cut node's network, then its server.
// Nodes it could not bring back stay on its lists.
func (p *PowerCut) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	left, nerr := healEach(p.silenced, eachNode, func(n string) error { return p.unsilence(ctx, n) })
	p.silenced = left
	k := &Kill{Label: p.Label, Cluster: p.Cluster, DB: p.DB, killed: p.killed}
	serr := k.Stop(ctx)
	p.killed = k.killed
	if nerr != nil {
		return fmt.Errorf("%s: bringing the network back: %w", p.Label, nerr)
	}
	return serr
}

// shellQuoteWords quotes each word of s for sh.
func shellQuoteWords(s string) string {
	var out []string
	for _, w := range strings.Fields(s) {
		out = append(out, shellQuote(w))
	}
	return strings.Join(out, " ")
}
