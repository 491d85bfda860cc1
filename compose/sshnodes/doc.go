// Package sshnodes is the SSH driver of compose/nodes: a test's machines
// are the user's own hosts, named in an inventory file (inventory.go),
// reached over one golang.org/x/crypto/ssh connection each, with a
// session per command. It runs commands (as root through a root login or
// `sudo -n`), keeps streams open, copies files with cat, freezes what it
// started with the cgroup freezer (or SIGSTOP where no cgroup is
// writable), cuts a host off from its peers in an iptables chain of its
// own, and records everything it starts under /run/fencecheck/<test id>/
// on each host, where a heal script and a watchdog that runs it (if the
// harness never comes back) leave the host as it was found.
//
// What it must never do: touch what it did not start (a process not
// recorded, an iptables chain or table that is not fencecheck-<id>'s, a
// cgroup outside fencecheck-<id>), wipe an adopted host's data, prompt
// for a password, or reach an address the inventory does not name.
package sshnodes
