package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/words"
)

// Shape is one way of cutting the network, after Jepsen's grudges.
type Shape string

const (
	// IsolateOne cuts one random server node off from the other servers.
	IsolateOne Shape = "one"
	// Halves cuts the servers into two random halves (the smaller first).
	Halves Shape = "halves"
	// Ring leaves every server seeing a majority of the servers, no two the
	// same majority (Jepsen's majorities-ring; with 3 servers the only such
	// cut is a bridge).
	Ring Shape = "ring"
	// Bridge cuts the servers in halves but keeps one node of the second
	// half connected to both.
	Bridge Shape = "bridge"
	// IsolatePrimary cuts the node the lock service says leads off from
	// the other servers.
	IsolatePrimary Shape = "primary"
	// ClientFromServers cuts the current lease holder's client container
	// off from every server node; it still reaches the storage.
	ClientFromServers Shape = "client"
	// ClientFromStorage cuts the current holder off from the storage; it
	// still reaches the servers.
	ClientFromStorage Shape = "client-storage"
	// PrimaryWithClients cuts the node the lock service says leads, with
	// half the client slots (drawn each time, at least one), off from the
	// other servers and the other clients: Jepsen's split brain of 2013,
	// where clients on the old leader's side still reach it and nothing
	// else. Everyone still reaches the storage.
	PrimaryWithClients Shape = "primary-clients"
)

// ServerShapes are the shapes the plain `partition` fault picks from.
var ServerShapes = []Shape{IsolateOne, Halves, Ring, Bridge, IsolatePrimary}

// The partition family: each word picks from its shapes.
func init() {
	for _, p := range []struct {
		name    string
		shapes  []Shape
		summary string
	}{
		{"partition", ServerShapes, "cut the servers apart in a shape drawn each time: one, halves, ring, bridge or primary"},
		{"partition-one", []Shape{IsolateOne}, "cut one random server node off from the other servers"},
		{"partition-halves", []Shape{Halves}, "cut the servers into two random halves"},
		{"partition-ring", []Shape{Ring}, "leave every server a majority of its own, no two the same (3 servers or more)"},
		{"partition-bridge", []Shape{Bridge}, "cut the servers in halves bridged by one node (3 servers or more)"},
		{"partition-primary", []Shape{IsolatePrimary}, "cut the node the lock service says leads off from the other servers"},
		{"partition-client", []Shape{ClientFromServers}, "cut a lease holder's client off from every server (it still reaches the storage)"},
		{"partition-client-storage", []Shape{ClientFromStorage}, "cut a lease holder's client off from the storage (it still reaches the servers)"},
		{"partition-primary-clients", []Shape{PrimaryWithClients}, "cut the leader and half the clients off from the other servers and clients (a split brain: clients on its side still reach the old leader)"},
	} {
		registerPartition(p.name, p.shapes, p.summary)
	}
}

func registerPartition(name string, shapes []Shape, summary string) {
	needs := Needs{Docker: true, Servers: 1 << 30}
	for _, s := range shapes {
		needs.Servers = min(needs.Servers, s.minServers())
		needs.Leader = needs.Leader || s == IsolatePrimary || s == PrimaryWithClients
		needs.CutsClient = needs.CutsClient || s == ClientFromServers || s == ClientFromStorage || s == PrimaryWithClients
	}
	// A cut of the holder's own client is aimed at the holder.
	aims := slices.Contains(shapes, ClientFromServers) || slices.Contains(shapes, ClientFromStorage)
	Register(Kind{Name: name, Summary: summary, Needs: needs, AimsAtHolder: aims,
		Check: func(s Settings) error {
			if len(PossibleShapes(shapes, s.Servers)) == 0 {
				return fmt.Errorf("%s cuts the lock service's servers apart, and backend %s runs on %s here: nothing to cut (partition-client and partition-client-storage work here)",
					name, s.Backend, words.Plural(s.Servers, "server node"))
			}
			return nil
		},
		Build: func(ctx context.Context, env *Env) (Fault, error) {
			slots, _ := env.Slots(ctx)
			return &Partition{Label: name, Cluster: env.Cluster, Shapes: PossibleShapes(shapes, len(env.ServerNodes)),
				Servers: env.ServerNodes, Clients: slots, Storage: env.Storage, Primary: env.Primary,
				Holder: func(ctx context.Context) string { return env.Holders().Wait(ctx) }}, nil
		}})
}

// minServers is the least number of server nodes the shape cuts
// something among.
func (s Shape) minServers() int {
	switch s {
	case ClientFromServers, ClientFromStorage:
		return 0
	case Ring, Bridge:
		return 3
	}
	return 2
}

// PossibleShapes keeps the shapes that cut something among n servers.
func PossibleShapes(shapes []Shape, n int) []Shape {
	return slices.DeleteFunc(slices.Clone(shapes), func(s Shape) bool { return n < s.minServers() })
}

// FenceChain is the iptables chain, jumped to first from INPUT, that holds
// a partition's rules in every node it touches. Healing flushes it.
const FenceChain = "FENCE"

// Grudge says, for each node, the nodes whose packets it drops. Every
// shape here is symmetric: if a drops b, b drops a.
type Grudge map[string][]string

func (g Grudge) cut(a, b string) {
	g[a] = appendOnce(g[a], b)
	g[b] = appendOnce(g[b], a)
}

// cutAcross cuts every node of as from every node of bs.
func (g Grudge) cutAcross(as, bs []string) {
	for _, a := range as {
		for _, b := range bs {
			g.cut(a, b)
		}
	}
}

// Partition drops packets between nodes with iptables rules inside the
// containers, in the FENCE chain; Stop flushes that chain on every node the
// fault touched. DROP in INPUT of the container's own namespace stops
// established connections too, whatever conntrack knows. It never touches
// the nat table (Docker's embedded DNS lives there).
type Partition struct {
	// Label is the --nemesis word: partition, partition-halves...
	Label   string
	Cluster nodes.Nodes
	// Shapes are picked from at random, one per Start.
	Shapes []Shape
	// Servers are the lock service's nodes (n1..nN).
	Servers []string
	// Clients are the client slots (c1..cN), for PrimaryWithClients.
	Clients []string
	// Storage is the storage node, for ClientFromStorage.
	Storage string
	// Primary names the node that leads now, for IsolatePrimary.
	Primary func(ctx context.Context) (string, error)
	// Holder waits for the slot of a client holding a lease now, for the
	// client shapes; "" when ctx ends first.
	Holder func(ctx context.Context) string

	mu      sync.Mutex
	touched []string // nodes whose FENCE chain may hold rules
}

func (p *Partition) Name() string { return p.Label }

// Start picks a shape, works out its grudge and installs it. It returns the
// nodes it cut, the main target first (the isolated node, the holder's
// slot, the smaller half).
func (p *Partition) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	if len(p.Shapes) == 0 {
		return nil, fmt.Errorf("%s: no shapes to pick from", p.Label)
	}
	shape := p.Shapes[rng.IntN(len(p.Shapes))]
	var primary, holder string
	switch shape {
	case IsolatePrimary, PrimaryWithClients:
		if p.Primary == nil {
			return nil, fmt.Errorf("%s: the lock service cannot name its primary", p.Label)
		}
		var err error
		if primary, err = p.Primary(ctx); err != nil {
			return nil, fmt.Errorf("%s: finding the primary: %w", p.Label, err)
		}
		if primary == "" {
			return nil, nil // no leader now: nothing to isolate
		}
	case ClientFromServers, ClientFromStorage:
		if p.Holder == nil {
			return nil, fmt.Errorf("%s: no holder observer", p.Label)
		}
		if holder = p.Holder(ctx); holder == "" {
			return nil, nil
		}
	}
	var g Grudge
	var order []string
	var err error
	if shape == PrimaryWithClients {
		g, order, err = primarySide(rng, p.Servers, p.Clients, primary)
	} else {
		g, order, err = shape.Grudge(rng, p.Servers, primary, holder, p.Storage)
	}
	if err != nil || len(g) == 0 {
		return nil, err
	}
	if err := p.apply(ctx, g); err != nil {
		return nil, err
	}
	return order, nil
}

// apply installs g: on each node, a DROP rule per peer it holds a grudge
// against, by the peer's address.
func (p *Partition) apply(ctx context.Context, g Grudge) error {
	nodes := sortedKeys(g)
	if pt, ok := p.Cluster.(nodesPartitioner); ok {
		return p.applyByDriver(ctx, pt, g, nodes)
	}
	scripts := map[string]string{}
	for _, n := range nodes {
		var b strings.Builder
		b.WriteString(ensureChain(FenceChain, "INPUT"))
		for _, peer := range g[n] {
			ip, err := ipOf(p.Cluster, peer)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " && iptables -w -A %s -s %s -j DROP", FenceChain, ip)
		}
		scripts[n] = b.String()
	}
	// Remember first: a node that fails half-way is still healed.
	p.mu.Lock()
	p.touched = appendOnce(p.touched, nodes...)
	p.mu.Unlock()
	// Docker cannot stop an exec: an interrupt must not return before the
	// rules are in, or the heal could run first and the rules land after.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := eachNode(nodes, func(n string) error {
		_, err := script(ctx, p.Cluster, n, scripts[n])
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: installing the rules: %w", p.Label, err)
	}
	return nil
}

// nodesPartitioner is a driver that makes partitions itself
// (nodes.Partitioner: hosts over SSH, in a chain of the test's own whose
// first rule accepts the control machine).
type nodesPartitioner = nodes.Partitioner

// applyByDriver installs g through the driver's own partitions: on each
// node, the peers it holds a grudge against dropped by name.
func (p *Partition) applyByDriver(ctx context.Context, pt nodesPartitioner, g Grudge, order []string) error {
	p.mu.Lock()
	p.touched = appendOnce(p.touched, order...)
	p.mu.Unlock()
	// As with the rules in the nodes: the cut runs to its end even on an
	// interrupt, so that the heal never runs before it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := eachNode(order, func(n string) error { return pt.DropFrom(ctx, n, g[n]...) })
	if err != nil {
		return fmt.Errorf("%s: installing the rules: %w", p.Label, err)
	}
	return nil
}

// ensureChain creates chain if missing and jumps to it first from hook.
func ensureChain(chain, hook string) string {
	return fmt.Sprintf("{ iptables -w -N %[1]s 2>/dev/null || true; } && "+
		"{ iptables -w -C %[2]s -j %[1]s 2>/dev/null || iptables -w -I %[2]s 1 -j %[1]s; }", chain, hook)
}

// flushChain empties chain; a node where it does not exist has nothing to
// heal.
func flushChain(chain string) string {
	return fmt.Sprintf("if iptables -w -S %[1]s >/dev/null 2>&1; then iptables -w -F %[1]s; fi", chain)
}

// Stop flushes FENCE on every node the fault touched, retrying nodes that
// are paused for a while. Nodes it could not heal stay on its list for the
// next Stop.
func (p *Partition) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	left, err := healEach(p.touched, eachNode, func(n string) error {
		if pt, ok := p.Cluster.(nodesPartitioner); ok {
			if err := pt.HealPartition(ctx, n); err != nil {
				return fmt.Errorf("%s: healing %s: %w", p.Label, n, err)
			}
			return nil
		}
		if _, err := scriptPatiently(ctx, p.Cluster, n, flushChain(FenceChain), healPatience); err != nil {
			return fmt.Errorf("%s: healing %s: %w", p.Label, n, err)
		}
		return nil
	})
	p.touched = left
	return err
}

// Grudge works the shape out over the servers (shuffled with rng). It
// returns the grudge and the nodes it cuts, main target first; an empty
// grudge when the shape cuts nothing (a single server).
func (s Shape) Grudge(rng *rand.Rand, servers []string, primary, holder, storage string) (Grudge, []string, error) {
	g := Grudge{}
	nodes := slices.Clone(servers)
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	switch s {
	case IsolateOne:
		if len(nodes) < 2 {
			return nil, nil, nil
		}
		g.cutAcross(nodes[:1], nodes[1:])
		return g, nodes, nil
	case Halves:
		if len(nodes) < 2 {
			return nil, nil, nil
		}
		half := len(nodes) / 2
		g.cutAcross(nodes[:half], nodes[half:])
		return g, nodes, nil
	case Bridge:
		if len(nodes) < 3 {
			return nil, nil, nil
		}
		half := len(nodes) / 2
		bridge := nodes[half]
		g.cutAcross(nodes[:half], nodes[half+1:])
		order := append(append(slices.Clone(nodes[:half]), nodes[half+1:]...), bridge)
		return g, order, nil
	case Ring:
		if len(nodes) < 3 {
			return nil, nil, nil
		}
		g = majoritiesRing(nodes)
		return g, nodes, nil
	case IsolatePrimary:
		if !slices.Contains(servers, primary) {
			return nil, nil, fmt.Errorf("the primary %q is not a server node (%s)", primary, strings.Join(servers, ", "))
		}
		rest := slices.DeleteFunc(slices.Clone(servers), func(n string) bool { return n == primary })
		if len(rest) == 0 {
			return nil, nil, nil
		}
		g.cutAcross([]string{primary}, rest)
		return g, append([]string{primary}, rest...), nil
	case ClientFromServers:
		if holder == "" || len(servers) == 0 {
			return nil, nil, nil
		}
		g.cutAcross([]string{holder}, servers)
		return g, append([]string{holder}, servers...), nil
	case ClientFromStorage:
		if holder == "" || storage == "" {
			return nil, nil, nil
		}
		g.cut(holder, storage)
		return g, []string{holder, storage}, nil
	}
	return nil, nil, fmt.Errorf("unknown partition shape %q", s)
}

// primarySide is PrimaryWithClients' grudge: the primary and half the
// clients (at least one, drawn with rng) on one side, the other servers
// and clients on the other. It returns the nodes it cut, the primary
// first, then its clients, then the other side.
func primarySide(rng *rand.Rand, servers, clients []string, primary string) (Grudge, []string, error) {
	if !slices.Contains(servers, primary) {
		return nil, nil, fmt.Errorf("the primary %q is not a server node (%s)", primary, strings.Join(servers, ", "))
	}
	rest := slices.DeleteFunc(slices.Clone(servers), func(n string) bool { return n == primary })
	if len(rest) == 0 || len(clients) == 0 {
		return nil, nil, nil
	}
	cs := slices.Clone(clients)
	rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	half := max(len(cs)/2, 1)
	side := append([]string{primary}, cs[:half]...)
	other := append(rest, cs[half:]...)
	g := Grudge{}
	g.cutAcross(side, other)
	return g, append(side, other...), nil
}

// majoritiesRing is Jepsen's majorities-ring over shuffled nodes: every
// node sees a majority (itself included) and no two see the same one. The
// nodes stand in a ring and each sees those within d steps, d the smallest
// that makes a majority: with five nodes each sees its two neighbours,
// Jepsen's perfect ring. Three nodes have no such symmetric ring; there,
// as with Jepsen's stochastic construction, one node sees both others and
// they do not see each other (a bridge).
func majoritiesRing(nodes []string) Grudge {
	n := len(nodes)
	g := Grudge{}
	if n == 3 {
		g.cut(nodes[0], nodes[1]) // nodes[2] bridges them
		return g
	}
	m := n/2 + 1
	d := m / 2 // 2d+1 ≥ m, and 2d+1 < n for every n ≥ 4
	for i := range nodes {
		for j := i + 1; j < n; j++ {
			if dist := min(j-i, n-(j-i)); dist > d {
				g.cut(nodes[i], nodes[j])
			}
		}
	}
	return g
}

func sortedKeys(g Grudge) []string {
	out := make([]string, 0, len(g))
	for k := range g {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
