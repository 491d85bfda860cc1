package sshnodes

import (
	"context"
	"fmt"
	"net"
	"strings"
)

// DropFrom cuts node's host off from the peers named (node names): in the
// test's own iptables chain (ChainName), jumped to first from INPUT,
// every packet from a peer's address is dropped. The chain's first rule
// accepts the control machine's address (as the host sees it), so that a
// partition never cuts fencecheck off from its hosts. Nothing outside
// the chain and its jump is touched.
func (hs *Hosts) DropFrom(ctx context.Context, node string, peers ...string) error {
	h, err := hs.host(node)
	if err != nil {
		return err
	}
	var ips []string
	for _, p := range peers {
		ph, err := hs.host(p)
		if err != nil {
			return err
		}
		ip := net.ParseIP(ph.Peer)
		if ip == nil || ip.To4() == nil {
			return fmt.Errorf("partition %s from %s: %s's peer address %q is not IPv4: only iptables (IPv4) partitions are made", node, p, p, ph.Peer)
		}
		if ph.Peer == h.control {
			return fmt.Errorf("partition %s from %s: %s reaches the control machine at %s, %s's own address: dropping it would cut fencecheck off from %s",
				node, p, node, h.control, p, node)
		}
		ips = append(ips, ph.Peer)
	}
	res, err := h.runRoot(ctx, dropScript(ChainName(hs.id), h.control, ips), nil)
	if err != nil {
		return fmt.Errorf("partition %s from %s: %w", node, strings.Join(peers, ", "), err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("partition %s from %s: %s (exit %d)", node, strings.Join(peers, ", "), strings.TrimSpace(res.Stderr), res.ExitCode)
	}
	return nil
}

// HealPartition removes the jump to the test's chain from INPUT and the
// chain itself on node's host. It is idempotent.
func (hs *Hosts) HealPartition(ctx context.Context, node string) error {
	h, err := hs.host(node)
	if err != nil {
		return err
	}
	res, err := h.runRoot(ctx, healChainScript(ChainName(hs.id)), nil)
	if err != nil {
		return fmt.Errorf("healing the partition of %s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("healing the partition of %s: %s (exit %d)", node, strings.TrimSpace(res.Stderr), res.ExitCode)
	}
	return nil
}

// dropScript makes the chain (its first rule accepting control), jumps
// to it first from INPUT, and appends a DROP for each address.
func dropScript(chain, control string, ips []string) string {
	var b strings.Builder
	b.WriteString("command -v iptables >/dev/null 2>&1 || { echo 'iptables is not installed: partitions need it' >&2; exit 1; }\n")
	fmt.Fprintf(&b, "iptables -w -N %s 2>/dev/null\n", chain)
	if ip := net.ParseIP(control); ip != nil && ip.To4() != nil {
		fmt.Fprintf(&b, "iptables -w -C %[1]s -s %[2]s -j ACCEPT 2>/dev/null || iptables -w -I %[1]s 1 -s %[2]s -j ACCEPT || exit 1\n", chain, control)
	}
	fmt.Fprintf(&b, "iptables -w -C INPUT -j %[1]s 2>/dev/null || iptables -w -I INPUT 1 -j %[1]s || exit 1\n", chain)
	for _, ip := range ips {
		fmt.Fprintf(&b, "iptables -w -C %[1]s -s %[2]s -j DROP 2>/dev/null || iptables -w -A %[1]s -s %[2]s -j DROP || exit 1\n", chain, ip)
	}
	return b.String()
}

// healChainScript removes every jump to the chain from INPUT, then the
// chain.
func healChainScript(chain string) string {
	return fmt.Sprintf(`command -v iptables >/dev/null 2>&1 || exit 0
while iptables -w -D INPUT -j %[1]s 2>/dev/null; do :; done
if iptables -w -S %[1]s >/dev/null 2>&1; then iptables -w -F %[1]s && iptables -w -X %[1]s; fi
`, chain)
}
