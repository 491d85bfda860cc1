package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// The faults of a run whose lock service is the user's own, reached only
// by its endpoints (--endpoints): fencecheck has no access to the servers'
// hosts, so only the faults that act on its own client and storage
// containers can be injected. Each of the others is refused by name,
// before anything is created.

// byAddress are those faults, each with how it works against servers
// reached by address.
var byAddress = map[string]string{
	"pause":                    "freezes a client container",
	PauseHolderName:            "freezes the holder's client container",
	"partition-client":         "drops, in the holder's client container, every packet to and from the endpoints' addresses",
	"partition-client-storage": "cuts the holder's client container off from the storage container",
}

// ByAddress lists the faults a run against servers reached only by
// address can inject, none first, then by name.
func ByAddress() []string {
	out := []string{None}
	for _, n := range Names() {
		if _, ok := byAddress[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// CheckByAddress refuses the first fault of names that needs access to
// the servers (an *Unavailable saying so); unknown words are left to
// CheckNames.
func CheckByAddress(names []string) error {
	for _, n := range names {
		if _, known := kinds[n]; !known || n == None {
			continue
		}
		if _, ok := byAddress[n]; !ok {
			return unavailable(n, "fault %s needs access to the servers; --endpoints gives none (accepted with --endpoints: %s)",
				n, strings.Join(ByAddress(), ", "))
		}
	}
	return nil
}

// ServiceAddress is one endpoint of the user's service and the addresses
// its host resolves to in the client containers.
type ServiceAddress struct {
	Endpoint string
	IPs      []string
}

// BuildByAddress makes ks's faults for a run against servers reached at
// addrs only: each as it is built for a Docker run, but partition-client,
// whose rules go on the holder's client container alone (the servers'
// side is not fencecheck's to touch).
func BuildByAddress(ctx context.Context, ks Kinds, env *Env, addrs []ServiceAddress) ([]Fault, error) {
	if err := CheckByAddress(ks.Names()); err != nil {
		return nil, err
	}
	var out []Fault
	for _, k := range ks {
		if err := k.check(env.Settings); err != nil {
			return nil, err
		}
		if k.Name == "partition-client" {
			var ips []string
			for _, a := range addrs {
				ips = appendOnce(ips, a.IPs...)
			}
			if len(ips) == 0 {
				return nil, unavailable(k.Name, "partition-client drops the packets of the endpoints' addresses, and none of them resolved in the client containers")
			}
			out = append(out, &ClientCut{Label: k.Name, env: env, IPs: ips, Endpoints: endpointsOf(addrs),
				Holder: func(ctx context.Context) string { return env.Holders().Wait(ctx) }})
			continue
		}
		f, err := k.Build(ctx, env)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func endpointsOf(addrs []ServiceAddress) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.Endpoint)
	}
	return out
}

// FenceOutChain is the iptables chain, jumped to first from OUTPUT, that
// holds ClientCut's outgoing rules. With servers that are not fencecheck's,
// the cut is made on the client's side alone, so it must drop both ways:
// a client whose requests still reached the servers would keep its lease
// alive through the cut.
const FenceOutChain = "FENCE_OUT"

// ClientCut cuts a lease holder's client container off from the user's
// servers: in that container, every packet from the servers' addresses
// (INPUT, the FENCE chain) and to them (OUTPUT, FENCE_OUT) is dropped.
// Stop flushes both chains in every container it touched.
type ClientCut struct {
	Label string
	env   *Env
	// IPs are the servers' addresses as the client containers resolve
	// them; Endpoints name them in the history.
	IPs       []string
	Endpoints []string
	// Holder waits for the slot of a client holding a lease now; "" when
	// ctx ends first.
	Holder func(ctx context.Context) string

	mu      sync.Mutex
	touched []string
}

func (c *ClientCut) Name() string { return c.Label }

// Start waits for a holder and cuts it off; it returns the holder's slot
// and the endpoints it was cut from.
func (c *ClientCut) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	holder := c.Holder(ctx)
	if holder == "" {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString(ensureChain(FenceChain, "INPUT"))
	b.WriteString(" && ")
	b.WriteString(ensureChain(FenceOutChain, "OUTPUT"))
	for _, ip := range c.IPs {
		fmt.Fprintf(&b, " && iptables -w -A %s -s %s -j DROP && iptables -w -A %s -d %s -j DROP", FenceChain, ip, FenceOutChain, ip)
	}
	c.mu.Lock()
	c.touched = appendOnce(c.touched, holder)
	c.mu.Unlock()
	// As Partition.apply: the rules must be in before an interrupt
	// returns, or the heal could run first.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := script(sctx, c.env.Cluster, holder, b.String()); err != nil {
		return nil, fmt.Errorf("%s: installing the rules in %s: %w", c.Label, holder, err)
	}
	return append([]string{holder}, c.Endpoints...), nil
}

// Stop flushes both chains in every container the fault touched; those it
// could not heal stay on its list for the next Stop.
func (c *ClientCut) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	left, err := healEach(c.touched, eachNode, func(n string) error {
		if _, err := scriptPatiently(ctx, c.env.Cluster, n, flushChain(FenceChain)+" && "+flushChain(FenceOutChain), healPatience); err != nil {
			return fmt.Errorf("%s: healing %s: %w", c.Label, n, err)
		}
		return nil
	})
	c.touched = left
	return err
}
