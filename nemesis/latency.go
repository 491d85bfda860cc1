package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// DelayChain is the iptables chain, jumped to first from OUTPUT, that
// queues a latency fault's packets to the delayer.
const DelayChain = "FENCE-DELAY"

const (
	delayerPid = "/run/fencecheck-delay.pid"
	delayerLog = "/var/log/fencecheck/delay.log"
)

// The latency fault's delay: Jepsen's default of 50 ms with jitter, and a
// little loss.
var latencyDelayer = Delayer{Queue: 7, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02}

func init() {
	Register(Kind{Name: "latency", Summary: "delay the server nodes' packets by 50 ms ± 10 ms and drop 2% of them",
		Needs: Needs{Docker: true, Servers: 1},
		Build: func(ctx context.Context, env *Env) (Fault, error) {
			l := &Latency{Cluster: env.Cluster, Targets: env.AllServers, Delayer: latencyDelayer, Command: []string{nodes.BinaryPath, "delay"}}
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := l.Probe(ctx, env.ServerNodes[0]); err != nil {
				hint := ""
				var r *LatencyRefusal
				if errors.As(err, &r) && r.Delayer != "" && r.NFQueue == "" {
					hint = " (the check binary needs a `delay` command that calls nemesis.RunDelayer)"
				}
				return nil, unavailable("latency", "latency: %v%s", err, hint)
			}
			return l, nil
		}})
}

// Latency delays (and drops a share of) every packet the target nodes send
// to the other nodes of the cluster. The kernels fencecheck runs on may
// lack sch_netem, so the delay is made in user space: iptables queues the
// packets (NFQUEUE) to a Delayer running in the node, which holds each for
// the delay. Packets to the host (the harness asking who leads) are left
// alone.
type Latency struct {
	Cluster nodes.Nodes
	// Targets lists the nodes whose outgoing packets are delayed (the
	// server nodes): between two targets the round trip grows by twice
	// the delay, between a target and another node by once.
	Targets func(ctx context.Context) ([]string, error)
	Delayer Delayer
	// Command runs RunDelayer in a node: [/usr/local/bin/check delay] or
	// the delayd program.
	Command []string
	// Unavailable, when set (from Probe), is returned by every Start.
	Unavailable error

	mu      sync.Mutex
	touched []string
}

func (l *Latency) Name() string { return "latency" }

// Start runs a delayer in every target node, waits until it has bound its
// queue, then queues the node's packets to its peers to it.
func (l *Latency) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	if l.Unavailable != nil {
		return nil, l.Unavailable
	}
	if err := l.Delayer.validate(); err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	ts, err := l.Targets(ctx)
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	l.mu.Lock()
	l.touched = appendOnce(l.touched, ts...)
	l.mu.Unlock()
	// Docker cannot stop an exec: an interrupt must not return before the
	// rules are in, or the heal could run first and the rules land after.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = eachNode(ts, func(n string) error { return l.startNode(sctx, n) })
	if err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	return ts, nil
}

func (l *Latency) startNode(ctx context.Context, node string) error {
	var q []string
	for _, a := range append(append([]string(nil), l.Command...), l.Delayer.args()...) {
		q = append(q, shellQuote(a))
	}
	run := fmt.Sprintf("mkdir -p /var/log/fencecheck && echo $$ > %s && exec %s >>%s 2>&1", delayerPid, strings.Join(q, " "), delayerLog)
	if _, err := l.Cluster.ExecDetached(ctx, node, []string{"sh", "-c", run}, nodes.ExecOptions{Privileged: true}); err != nil {
		return err
	}
	// The queue shows in the node's /proc once the delayer has bound it.
	wait := fmt.Sprintf(`for i in $(seq 100); do
  if awk '$1 == %d { found = 1 } END { exit !found }' /proc/net/netfilter/nfnetlink_queue 2>/dev/null; then exit 0; fi
  pid=$(cat %s 2>/dev/null); if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then echo "the delayer exited:"; tail -n 5 %s; exit 1; fi
  sleep 0.05
done; echo "the delayer did not bind queue %d within 5s:"; tail -n 5 %s; exit 1`, l.Delayer.Queue, delayerPid, delayerLog, l.Delayer.Queue, delayerLog)
	if _, err := script(ctx, l.Cluster, node, wait); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(ensureChain(DelayChain, "OUTPUT"))
	for _, peer := range l.Cluster.All() {
		if peer.Name == node || peer.IP == "" {
			continue
		}
		fmt.Fprintf(&b, " && iptables -w -A %s -d %s -j NFQUEUE --queue-num %d --queue-bypass", DelayChain, peer.IP, l.Delayer.Queue)
	}
	_, err := script(ctx, l.Cluster, node, b.String())
	return err
}

// Stop stops queueing on every node it touched, gives the delayers time to
// let the packets they hold go, and stops them. A delayer that had died
// during the fault is an error: the delay it was to add was not there.
func (l *Latency) Stop(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.touched) == 0 {
		return nil
	}
	var mu sync.Mutex
	var left []string
	keep := func(n string) {
		mu.Lock()
		left = appendOnce(left, n)
		mu.Unlock()
	}
	errFlush := eachNode(l.touched, func(n string) error {
		if _, err := scriptPatiently(ctx, l.Cluster, n, flushChain(DelayChain), healPatience); err != nil {
			keep(n)
			return fmt.Errorf("latency: healing %s: %w", n, err)
		}
		return nil
	})
	// What is queued already leaves within the delay and its jitter.
	time.Sleep(l.Delayer.Delay + l.Delayer.Jitter + 50*time.Millisecond)
	stop := fmt.Sprintf(`pid=$(cat %[1]s 2>/dev/null) || exit 0
rm -f %[1]s
if ! kill -0 "$pid" 2>/dev/null; then echo "the delayer had died:"; tail -n 5 %[2]s; exit 3; fi
kill -TERM "$pid"
for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.05; done
kill -KILL "$pid"`, delayerPid, delayerLog)
	errStop := eachNode(l.touched, func(n string) error {
		if _, err := scriptPatiently(ctx, l.Cluster, n, stop, healPatience); err != nil {
			var se *scriptError
			if !errors.As(err, &se) {
				keep(n)
			}
			return fmt.Errorf("latency: stopping the delayer in %s: %w", n, err)
		}
		return nil
	})
	l.touched = left
	return errors.Join(errFlush, errStop)
}

// Probe finds out, in node, whether this fault can delay packets there. A
// nil answer means it can; a *LatencyRefusal says why not, naming what the
// kernel or the node lacks; any other error is an exec that failed. The
// harness probes once per run.
func (l *Latency) Probe(ctx context.Context, node string) error {
	var q []string
	probeDelayer := Delayer{Queue: 65001, Delay: time.Millisecond}
	for _, a := range append(append([]string(nil), l.Command...), probeDelayer.args()...) {
		q = append(q, shellQuote(a))
	}
	probe := fmt.Sprintf(`if tc qdisc add dev lo root netem delay 1ms 2>/tmp/fc-probe; then tc qdisc del dev lo root; echo "netem: yes"; else echo "netem: no: $(head -n 1 /tmp/fc-probe)"; fi
iptables -w -N FENCE-PROBE 2>/dev/null
if iptables -w -A FENCE-PROBE -j NFQUEUE --queue-num 65001 --queue-bypass 2>/tmp/fc-probe; then echo "nfqueue: yes"; else echo "nfqueue: no: $(head -n 1 /tmp/fc-probe)"; fi
iptables -w -F FENCE-PROBE; iptables -w -X FENCE-PROBE
timeout 1 %s >/tmp/fc-probe 2>&1
if grep -q '%s' /tmp/fc-probe; then echo "delayer: yes"; else echo "delayer: no: $(grep -v '^ *$' /tmp/fc-probe | head -n 1 | head -c 200)"; fi
rm -f /tmp/fc-probe`, strings.Join(q, " "), DelayerReady)
	out, err := script(ctx, l.Cluster, node, probe)
	if err != nil {
		return fmt.Errorf("probing for latency in %s: %w", node, err)
	}
	found := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		found[k] = strings.TrimSpace(v)
	}
	r := &LatencyRefusal{Node: node, Command: l.Command,
		Netem: lacks(found["netem"]), NFQueue: lacks(found["nfqueue"]), Delayer: lacks(found["delayer"])}
	if r.NFQueue == "" && r.Delayer == "" {
		return nil
	}
	return r
}

// lacks is what a probe line's answer says is missing: "" for "yes", the
// complaint after "no:" otherwise.
func lacks(answer string) string {
	if answer == "yes" {
		return ""
	}
	if answer == "" {
		return "the probe gave no answer"
	}
	if why := strings.TrimSpace(strings.TrimPrefix(answer, "no:")); why != "" {
		return why
	}
	return "no output"
}

// LatencyRefusal is Probe's answer when a node can run the probe but
// cannot delay packets: what the kernel and the node lack, each field empty
// when it is there. It is a type so that a caller can tell a kernel without
// NFQUEUE (nothing to be done on this machine) from a delayer that does not
// run (a broken binary or command, which is a bug); any other error from
// Probe means the probe itself could not run.
type LatencyRefusal struct {
	Node    string
	Command []string
	// Netem is tc's complaint when the kernel lacks sch_netem. It is not
	// needed, only named: it is why the delay is made in user space.
	Netem string
	// NFQueue is iptables' complaint when packets cannot be queued to
	// user space (-j NFQUEUE).
	NFQueue string
	// Delayer is what the delayer printed when it did not say it was ready.
	Delayer string
}

func (r *LatencyRefusal) Error() string {
	var why []string
	if r.NFQueue != "" {
		why = append(why, "iptables cannot queue packets to user space (-j NFQUEUE: "+r.NFQueue+")")
	}
	if r.Delayer != "" {
		why = append(why, fmt.Sprintf("the delayer `%s` does not run in the nodes (%s)", strings.Join(r.Command, " "), r.Delayer))
	}
	kernel := "the kernel has sch_netem, but fencecheck delays packets in user space only"
	if r.Netem != "" {
		kernel = "the kernel has no sch_netem (tc: " + r.Netem + "), so the delay must be made in user space through NFQUEUE"
	}
	return fmt.Sprintf("no honest delay is possible here: %s, and %s", kernel, strings.Join(why, "; "))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
