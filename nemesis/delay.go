package nemesis

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"
)

// Delayer is the user-space half of the latency fault, for kernels without
// sch_netem: it runs in a node, takes the packets netfilter queues to it
// (iptables -j NFQUEUE), holds each for Delay ± Jitter and lets it go, or
// drops it with probability Loss. It only ever delays or drops what is
// queued to it; it never sends or changes a packet.
type Delayer struct {
	Queue  uint16
	Delay  time.Duration
	Jitter time.Duration
	Loss   float64 // 0 to 1
}

func (d Delayer) validate() error {
	switch {
	case d.Delay < 0 || d.Delay > time.Minute:
		return fmt.Errorf("delay %s is out of range (0 to 1m)", d.Delay)
	case d.Jitter < 0 || d.Jitter > d.Delay:
		return fmt.Errorf("jitter %s is out of range (0 to the delay, %s)", d.Jitter, d.Delay)
	case d.Loss < 0 || d.Loss > 1:
		return fmt.Errorf("loss %g is out of range (0 to 1)", d.Loss)
	}
	return nil
}

// args is the command line RunDelayer parses back.
func (d Delayer) args() []string {
	return []string{"--queue", fmt.Sprint(d.Queue), "--delay", d.Delay.String(), "--jitter", d.Jitter.String(), "--loss", fmt.Sprint(d.Loss)}
}

// DelayerReady is the line RunDelayer prints once its queue is bound.
const DelayerReady = "delayer: ready"

// RunDelayer is the delayer's command line: `--queue N --delay D --jitter J
// --loss P`. It serves until SIGTERM or SIGINT, then lets every held packet
// go. A command in the node binary (cmd/check's `delay`) or a small program
// of its own (nemesis/delayd) calls it.
func RunDelayer(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("delay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var d Delayer
	queue := fs.Uint("queue", 7, "the NFQUEUE number to serve")
	fs.DurationVar(&d.Delay, "delay", 50*time.Millisecond, "how long each packet is held")
	fs.DurationVar(&d.Jitter, "jitter", 0, "uniform jitter around the delay (packets are never reordered)")
	fs.Float64Var(&d.Loss, "loss", 0, "share of packets dropped, 0 to 1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *queue > 65535 {
		return fmt.Errorf("--queue %d is out of range (0 to 65535)", *queue)
	}
	d.Queue = uint16(*queue)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	st, err := d.Serve(ctx, func() {
		fmt.Fprintf(stderr, "%s: queue %d, delay %s, jitter %s, loss %g\n", DelayerReady, d.Queue, d.Delay, d.Jitter, d.Loss)
	})
	fmt.Fprintf(stderr, "delayer: done: %d packets held, %d of them dropped\n", st.Packets, st.Dropped)
	return err
}

// DelayStats counts what a delayer did.
type DelayStats struct {
	Packets int64 // every packet queued to it
	Dropped int64 // those it dropped rather than let go
}
