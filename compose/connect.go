package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/docker/docker/client"
)

// Connect opens a client for the Docker daemon named by the environment
// (DOCKER_HOST and friends, else the local socket), checks that the daemon
// answers and settles the API version with it (Debian's engine 20.10 speaks
// API 1.41).
func Connect(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
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

// daemonError turns the SDK's connection errors into ones that say what to do.
func daemonError(host string, err error) error {
	switch {
	case err == nil:
		return nil
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
