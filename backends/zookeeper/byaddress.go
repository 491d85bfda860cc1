package zookeeper

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
)

// A ZooKeeper ensemble the user runs is tested by its client addresses
// (--endpoints host:2181,...): the questions below are the srvr
// four-letter word, which ZooKeeper allows by default
// (4lw.commands.whitelist), sent to each server's client port.
func init() {
	registry.RegisterByAddress("zookeeper", registry.ByAddress{
		Form:         "HOST:2181",
		Parse:        parseEndpoint,
		VersionQuery: "the srvr four-letter word on each endpoint (its Zookeeper version line)",
		Version: func(ctx context.Context, e string) (backends.ServerVersion, error) {
			out, err := srvrAt(ctx, e)
			if err != nil {
				return backends.ServerVersion{}, err
			}
			return parseSrvrVersion(e, out)
		},
		// No State: srvr's Zxid moves with every write of the ensemble's
		// other clients, so servers at different zxids would show no
		// disagreement on a service that is not the run's alone.
	})
}

// parseEndpoint takes host:port, as ZooKeeper's connect string lists its
// servers.
func parseEndpoint(e string) (host, port string, err error) {
	if strings.Contains(e, "/") {
		return "", "", fmt.Errorf("want host:port, such as zk-1:2181 (no scheme, no chroot)")
	}
	host, port, err = net.SplitHostPort(e)
	if err != nil || host == "" || port == "" {
		return "", "", fmt.Errorf("want host:port, such as zk-1:2181")
	}
	return host, port, nil
}

// srvrAt is the answer of the server at endpoint to srvr.
func srvrAt(ctx context.Context, endpoint string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, backends.AskTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return "", fmt.Errorf("%s: %w", endpoint, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", fmt.Errorf("%s: srvr: %w", endpoint, err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	if err != nil {
		return "", fmt.Errorf("%s: srvr: %w", endpoint, err)
	}
	if strings.Contains(string(b), "is not executed because it is not in the whitelist") {
		return "", fmt.Errorf("%s: srvr is not in the server's 4lw.commands.whitelist", endpoint)
	}
	return string(b), nil
}
