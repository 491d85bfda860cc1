package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/docker/docker/client"
)

// Connect opens a client for the Docker daemon named by the environment
// (DOCKER_HOST and friends, else the local socket), checks that the daemon
// answers and settles the API version with it (Debian's engine 20.10 speaks
// API 1.41).
//
// Every request but an exec's attached stream must get the daemon's answer
// (its headers) within responseTimeout, so a daemon that accepts
// connections but never answers fails the run in bounded time instead of
// hanging it. The longest legitimate waits are a container stop (its
// grace period) and an image import, well under it.
func Connect(ctx context.Context) (*client.Client, error) {
	httpClient := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: responseTimeout}}
	cli, err := client.NewClientWithOpts(client.WithHTTPClient(httpClient), client.WithHost(client.DefaultDockerHost),
		client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ping, err := cli.Ping(ctx)
	if err != nil {
		cli.Close()
		return nil, daemonError(cli.DaemonHost(), err)
	}
	cli.NegotiateAPIVersionPing(ping)
	return cli, nil
}

// responseTimeout bounds the wait for the daemon's answer to a request.
var responseTimeout = 3 * time.Minute

// daemonError turns the SDK's connection errors into ones that say what to do.
func daemonError(host string, err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "timeout awaiting response headers"):
		return fmt.Errorf("the Docker daemon at %s accepted the request but did not answer within %s: is it hung? (%w)", host, responseTimeout, err)
	case errors.Is(err, context.Canceled):
		// The caller gave up (an interrupt), not the daemon.
		return fmt.Errorf("cancelled while talking to the Docker daemon at %s: %w", host, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("cannot reach the Docker daemon at %s: %w", host, err)
	case errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied"):
		return fmt.Errorf("permission denied on the Docker socket %s: run as root or as a member of the docker group: %w",
			strings.TrimPrefix(host, "unix://"), err)
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("cannot reach the Docker daemon at %s: is it running? (%w)", host, err)
	default:
		return err
	}
}
