// Package engine drives the Docker Engine for one test: Connect opens the
// connection (local socket, tcp:// with TLS, or ssh:// through
// compose/sshtransport), Up brings up the test's cluster — a private
// bridge network with the servers n1..nN, an optional "storage" node and
// the clients c1..cM — and Cluster runs commands in it (Exec), pauses and
// unpauses nodes, copies files in and out, collects logs, runs a server
// image's containers beside the nodes (imageserver.go) and tears it all
// down. List and DownAll find what a crashed run left behind.
//
// It talks to the Docker Engine through the Go SDK only and never runs the
// docker command line. The engine may be remote: everything goes through
// the API, and nothing may assume the engine is local — no socket path, no
// /var/lib/docker, no dialling a container's address.
//
// It knows nothing of locks or faults and starts no server: the images
// (compose/images) carry the servers, the containers run `sleep
// infinity`, and the backends start the servers in them with Exec. It
// must never pull an image, and every object it creates carries the
// labels fencecheck=1 and fencecheck.test=<test id> so that List and
// DownAll can find it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/client"
	"github.com/docker/go-connections/tlsconfig"

	"github.com/fencecheck/fencecheck/compose/sshtransport"
)

// Connect opens a client for the Docker engine named by the environment
// (DOCKER_HOST and friends, else the local socket), checks that the engine
// answers and settles the API version with it (Debian's engine 20.10 speaks
// API 1.41).
//
// DOCKER_HOST may name a remote engine: tcp://host:2376 (with TLS from
// DOCKER_CERT_PATH, verified when DOCKER_TLS_VERIFY is set) or
// ssh://[user@]host[:port], reached as the docker command line reaches it,
// through `ssh host docker system dial-stdio` (compose/sshtransport; ssh's
// own options come from FENCECHECK_SSH_OPTS). Everything fencecheck does to
// containers goes through this client, so a run on a remote engine needs
// nothing else.
//
// Every request but an exec's attached stream must get the engine's answer
// (its headers) within responseTimeout, so an engine that accepts
// connections but never answers — or an ssh that hangs — fails the run in
// bounded time instead of hanging it. The longest legitimate waits are a
// container stop (its grace period) and an image import, well under it.
//
// FENCECHECK_DOCKER_TIMEOUT (a Go duration, 1s to 1h) changes that bound:
// longer for a daemon known to be slow, shorter for a test that wants a
// hung daemon to be found in seconds.
func Connect(ctx context.Context) (*client.Client, error) {
	bound, err := ResponseTimeout()
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{ResponseHeaderTimeout: bound, TLSHandshakeTimeout: bound}
	// client.FromEnv would replace this transport (and so the bound) when
	// DOCKER_CERT_PATH is set: TLS is set up here instead.
	if dir := os.Getenv(client.EnvOverrideCertPath); dir != "" {
		tlsc, err := tlsconfig.Client(tlsconfig.Options{
			CAFile:             filepath.Join(dir, "ca.pem"),
			CertFile:           filepath.Join(dir, "cert.pem"),
			KeyFile:            filepath.Join(dir, "key.pem"),
			InsecureSkipVerify: os.Getenv(client.EnvTLSVerify) == "",
		})
		if err != nil {
			return nil, fmt.Errorf("DOCKER_CERT_PATH=%s: %w (it must hold ca.pem, cert.pem and key.pem)", dir, err)
		}
		transport.TLSClientConfig = tlsc
	}
	host := client.DefaultDockerHost
	if h := os.Getenv(client.EnvOverrideHost); h != "" {
		host = h
	}
	var ssh *sshtransport.Engine
	if strings.HasPrefix(host, "ssh://") {
		if ssh, err = sshtransport.New(host, sshtransport.Opts(), bound); err != nil {
			return nil, err
		}
	}
	cli, err := client.NewClientWithOpts(client.WithHTTPClient(&http.Client{Transport: transport}),
		client.WithHost(host), client.WithVersionFromEnv(), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for DOCKER_HOST=%s: %w", host, err)
	}
	if ssh != nil {
		// Every connection, the attached streams of execs too, is an ssh
		// process; no proxy stands between.
		transport.DialContext = ssh.Dial
		transport.Proxy = nil
		transport.DisableCompression = true
	}
	pingCtx := ctx
	if ssh != nil {
		// Ping asks twice (HEAD, then GET) when the first goes unanswered:
		// one bound for both.
		var cancel context.CancelFunc
		pingCtx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	ping, err := cli.Ping(pingCtx)
	if err != nil {
		cli.Close()
		if ssh != nil && ctx.Err() == nil {
			return nil, ssh.Unreachable(err, noAnswer(err))
		}
		return nil, DaemonError(cli.DaemonHost(), err)
	}
	cli.NegotiateAPIVersionPing(ping)
	return cli, nil
}

// responseTimeout bounds the wait for the daemon's answer to a request,
// unless TimeoutEnv says otherwise.
var responseTimeout = 3 * time.Minute

// TimeoutEnv names the variable that sets the bound on the daemon's answer
// to each request (see Connect).
const TimeoutEnv = "FENCECHECK_DOCKER_TIMEOUT"

// ResponseTimeout is the bound on the daemon's answer to each request:
// TimeoutEnv when set, else 3 minutes. A value that is not a duration
// between 1s and 1h is an error that names the variable.
func ResponseTimeout() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(TimeoutEnv))
	if v == "" {
		return responseTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > time.Hour {
		return 0, fmt.Errorf("%s=%q: want a duration from 1s to 1h, e.g. 3m (the bound on the Docker daemon's answer to each request); fix it or unset it", TimeoutEnv, v)
	}
	return d, nil
}

// noAnswer says whether err means the daemon did not answer in time: the
// client's bound on its answer passed, or the caller's deadline did. An
// interrupt (a cancelled context) is not that.
func noAnswer(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return strings.Contains(err.Error(), "timeout awaiting response headers") ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// askError is DaemonError for a request about something (what: "the
// unpause of c1"), begun at began: when the daemon did not answer in time,
// it says so with the time it was given.
func askError(host, what string, began time.Time, err error) error {
	if !noAnswer(err) {
		return DaemonError(host, err)
	}
	return fmt.Errorf("the Docker daemon at %s did not answer %s within %s (it may be hung or starved of memory or CPU; the Docker daemon's own log may say why): %w",
		host, what, waited(time.Since(began)), err)
}

// waited rounds a wait for a message: whole seconds from 10 s on.
func waited(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// DaemonError turns the SDK's connection errors into ones that say what to do.
func DaemonError(host string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.As(err, new(*sshtransport.Error)):
		var se *sshtransport.Error
		errors.As(err, &se)
		return se
	case errors.Is(err, context.Canceled):
		// The caller gave up (an interrupt), not the daemon.
		return fmt.Errorf("cancelled while talking to the Docker daemon at %s: %w", host, err)
	case noAnswer(err):
		// It was reached (or is too slow to accept): not "cannot reach".
		return fmt.Errorf("the Docker daemon at %s did not answer in time: is it hung or starved of memory or CPU? (%w)", host, err)
	case errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied"):
		return fmt.Errorf("permission denied on the Docker socket %s: run as root or as a member of the docker group: %w",
			strings.TrimPrefix(host, "unix://"), err)
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("cannot reach the Docker daemon at %s: is it running? (%w)", host, err)
	default:
		return err
	}
}
