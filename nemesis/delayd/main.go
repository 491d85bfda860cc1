// Command delayd is the latency fault's delayer as a program of its own,
// for nodes whose check binary has no `delay` command: it holds the packets
// netfilter queues to it (see nemesis.Delayer). It must run inside a node's
// network namespace, never on the host.
package main

import (
	"os"

	"github.com/fencecheck/fencecheck/nemesis"
)

func main() {
	if err := nemesis.RunDelayer(os.Args[1:], os.Stderr); err != nil {
		os.Stderr.WriteString("delayd: " + err.Error() + "\n")
		os.Exit(1)
	}
}
