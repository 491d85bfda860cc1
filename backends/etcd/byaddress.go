package etcd

import (
	"context"
	"fmt"
	"net"
	"net/url"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
)

// An etcd the user runs is tested by its client URLs (--endpoints): every
// question below goes over etcd's own client API (clientv3's Maintenance
// service), one member at a time, and asks nothing that changes the
// cluster.
func init() {
	registry.RegisterByAddress("etcd", registry.ByAddress{
		Form:         "http://HOST:2379",
		Parse:        parseEndpoint,
		VersionQuery: "clientv3 Maintenance.Status on each endpoint (its version)",
		Version:      statusVersion,
		StateQuery:   "clientv3 Maintenance.Status on each endpoint (its revision), then Maintenance.HashKV at the lowest of them on every endpoint",
		State:        stateByAddress,
	})
}

// parseEndpoint takes a client URL as clientv3 does: http://host:port,
// nothing after the port. https needs certificates the run cannot hand
// its clients yet.
func parseEndpoint(e string) (host, port string, err error) {
	u, err := url.Parse(e)
	if err != nil {
		return "", "", fmt.Errorf("not a URL: %v", err)
	}
	switch {
	case u.Scheme == "https":
		return "", "", fmt.Errorf("TLS endpoints need certificates that fencecheck cannot give its clients yet; use the cluster's http:// client URL")
	case u.Scheme != "http":
		return "", "", fmt.Errorf("want a client URL such as http://etcd-1:2379")
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", "", fmt.Errorf("want scheme, host and port only, such as http://etcd-1:2379")
	}
	host, port, err = net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return "", "", fmt.Errorf("no port: want host and port, such as http://etcd-1:2379")
	}
	return host, port, nil
}

// member opens a client of the one member at endpoint.
func member(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: backends.AskTimeout, Logger: zap.NewNop()})
}

// statusVersion is the member's answer to Maintenance.Status: its version,
// with its member id, the leader it knows and its revision beside it.
func statusVersion(ctx context.Context, endpoint string) (backends.ServerVersion, error) {
	// clientv3 says only that its deadline passed when nothing listens:
	// a plain connection first says why.
	if host, port, err := parseEndpoint(endpoint); err == nil {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, backends.AskTimeout)
		conn, err := d.DialContext(dctx, "tcp", net.JoinHostPort(host, port))
		cancel()
		if err != nil {
			return backends.ServerVersion{}, fmt.Errorf("%s: %w", endpoint, err)
		}
		conn.Close()
	}
	cli, err := member(endpoint)
	if err != nil {
		return backends.ServerVersion{}, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, backends.AskTimeout)
	defer cancel()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return backends.ServerVersion{}, fmt.Errorf("%s: status: %w", endpoint, err)
	}
	answer := fmt.Sprintf("etcd %s (member %x, leader %x, revision %d)", st.Version, st.Header.MemberId, st.Leader, st.Header.Revision)
	return backends.ServerVersion{Answer: answer, Version: st.Version}, nil
}

// stateByAddress is AskState over the client API: each member's revision
// until they agree (a follower catching up), then each member's HashKV at
// the lowest revision any reached; the token counter is that revision.
func stateByAddress(ctx context.Context, endpoints []string) (backends.ServiceState, error) {
	return agreeAtLowestRevision(ctx, "Maintenance.Status, then Maintenance.HashKV at the lowest revision, on each endpoint", endpoints,
		statusRevision, hashKV), nil
}

// statusRevision is the member's revision, from its Maintenance.Status.
func statusRevision(ctx context.Context, endpoint string) (int64, error) {
	cli, err := member(endpoint)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, backends.AskTimeout)
	defer cancel()
	s, err := cli.Status(ctx, endpoint)
	if err != nil {
		return 0, fmt.Errorf("%s: status: %w", endpoint, err)
	}
	return s.Header.Revision, nil
}

// hashKV is the member's HashKV at rev, worded as AskState words it.
func hashKV(ctx context.Context, endpoint string, rev int64) (string, error) {
	cli, err := member(endpoint)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, backends.AskTimeout)
	defer cancel()
	h, err := cli.HashKV(ctx, endpoint, rev)
	if err != nil {
		return "", fmt.Errorf("%s: hashkv at revision %d: %w", endpoint, rev, err)
	}
	return fmt.Sprintf("HashKV %#08x at revision %d (compacted at %d)", h.Hash, rev, h.CompactRevision), nil
}
