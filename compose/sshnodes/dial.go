package sshnodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// DialTimeout bounds one host's TCP connect and SSH handshake.
const DialTimeout = 15 * time.Second

// dial opens the one SSH connection to h: its key (or the agent), its
// host key checked against known_hosts. It never prompts.
func dial(ctx context.Context, inv *Inventory, h Host) (*ssh.Client, error) {
	auth, closeAgent, err := authFor(h)
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	hostKeys, err := knownhosts.New(inv.KnownHosts...)
	if err != nil {
		return nil, fmt.Errorf("%s: reading known_hosts (%s): %w", h.label(), strings.Join(inv.KnownHosts, ", "), err)
	}
	cfg := &ssh.ClientConfig{
		User: h.User,
		Auth: []ssh.AuthMethod{auth},
		HostKeyCallback: func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			err := hostKeys(hostname, remote, key)
			var ke *knownhosts.KeyError
			if errors.As(err, &ke) {
				if len(ke.Want) == 0 {
					return fmt.Errorf("its host key (%s) is not in %s: check it, then add it with ssh-keyscan -p PORT HOST >> %s",
						key.Type(), strings.Join(inv.KnownHosts, ", "), inv.KnownHosts[0])
				}
				return fmt.Errorf("its host key (%s) is not the one %s has for it: the host was reinstalled, or this is not the host; check before you change known_hosts",
					key.Type(), strings.Join(inv.KnownHosts, ", "))
			}
			return err
		},
		HostKeyAlgorithms: nil,
		Timeout:           DialTimeout,
	}
	// The host's known key decides the algorithm: ask for its types first.
	if algos := knownAlgorithms(inv, h.Address); len(algos) > 0 {
		cfg.HostKeyAlgorithms = algos
	}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", h.Address)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be reached: %w", h.label(), err)
	}
	// The handshake is bounded too: a host that accepts and never speaks
	// must not hang the run.
	stop := context.AfterFunc(dctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, h.Address, cfg)
	stop()
	if err != nil {
		conn.Close()
		if dctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no SSH handshake within %s", DialTimeout)
		}
		return nil, fmt.Errorf("%s: logging in as %s: %w", h.label(), h.User, err)
	}
	return ssh.NewClient(c, chans, reqs), nil
}

// authFor is the host's key, or the agent's keys.
func authFor(h Host) (ssh.AuthMethod, func(), error) {
	if h.Key != "" {
		b, err := os.ReadFile(h.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: key: %w", h.label(), err)
		}
		signer, err := ssh.ParsePrivateKey(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: key %s: %w", h.label(), h.Key, err)
		}
		return ssh.PublicKeys(signer), func() {}, nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, nil, fmt.Errorf("%s: no key and no SSH agent (SSH_AUTH_SOCK is unset): give key: FILE in the hosts file", h.label())
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the SSH agent at %s: %w", h.label(), sock, err)
	}
	return ssh.PublicKeysCallback(agent.NewClient(conn).Signers), func() { conn.Close() }, nil
}

// knownAlgorithms lists the host key types known_hosts has for addr, so
// that the handshake asks for a key it can check.
func knownAlgorithms(inv *Inventory, addr string) []string {
	var algos []string
	host, port, _ := net.SplitHostPort(addr)
	want := []string{knownhosts.Normalize(addr)}
	if port == "22" {
		want = append(want, host)
	}
	for _, f := range inv.KnownHosts {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		rest := b
		for len(rest) > 0 {
			_, hosts, key, _, next, err := ssh.ParseKnownHosts(rest)
			if err != nil {
				break
			}
			rest = next
			for _, h := range hosts {
				for _, w := range want {
					if h == w {
						algos = appendAlgos(algos, key.Type())
					}
				}
			}
		}
	}
	return algos
}

func appendAlgos(algos []string, keyType string) []string {
	add := []string{keyType}
	if keyType == ssh.KeyAlgoRSA {
		add = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	for _, a := range add {
		found := false
		for _, have := range algos {
			found = found || have == a
		}
		if !found {
			algos = append(algos, a)
		}
	}
	return algos
}

// CheckReachable logs in to every host of the inventory at once and
// closes the connections: an error names each host that cannot be
// reached or logged in to, with the reason.
func CheckReachable(ctx context.Context, inv *Inventory) error {
	clients, err := dialAll(ctx, inv)
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
	return err
}

// dialAll opens a connection to each host at once, in the inventory's
// order; on any failure it closes what it opened and names every host
// that failed.
func dialAll(ctx context.Context, inv *Inventory) ([]*ssh.Client, error) {
	clients := make([]*ssh.Client, len(inv.Hosts))
	errs := make([]error, len(inv.Hosts))
	var wg sync.WaitGroup
	for i, h := range inv.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = dial(ctx, inv, h)
		}()
	}
	wg.Wait()
	var probs []string
	for _, err := range errs {
		if err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
		return nil, problems(inv.where(), probs)
	}
	return clients, nil
}
