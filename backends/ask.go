package backends

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// AskTimeout bounds one question a harness puts to a server in its node
// (a version query): a frozen or cut-off server must not hold the run.
const AskTimeout = 3 * time.Second

// AskInNode runs cmd in node, bounded by AskTimeout, and returns what it
// printed; a non-zero exit is an error naming the node and its stderr.
func AskInNode(ctx context.Context, c nodes.Nodes, node string, cmd []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	secs := fmt.Sprint(int((AskTimeout - 500*time.Millisecond) / time.Second))
	res, err := c.Exec(ctx, node, append([]string{"timeout", secs}, cmd...))
	if err != nil {
		return "", fmt.Errorf("%s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("%s: exit %d: %s", node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res.Stdout, nil
}

// HTTPGetInNode asks the server listening on port in node for path over
// HTTP/1.0, from inside the node (so it works on a remote Docker engine,
// whose container addresses this host cannot reach), and returns the
// body of a 200 answer. The node image has no curl: bash's /dev/tcp does.
func HTTPGetInNode(ctx context.Context, c nodes.Nodes, node string, port int, path string) (string, error) {
	req := fmt.Sprintf(`GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`, path)
	out, err := AskInNode(ctx, c, node, []string{"bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf '%s' >&3 && cat <&3`, port, req)})
	if err != nil {
		return "", err
	}
	return HTTPBody(node, path, out)
}

// HTTPBody is the body of a raw HTTP answer when its status is 200.
func HTTPBody(node, path, answer string) (string, error) {
	status, _, _ := strings.Cut(answer, "\r\n")
	_, body, ok := strings.Cut(answer, "\r\n\r\n")
	if !ok || !strings.HasPrefix(status, "HTTP/1.") || !strings.Contains(status, " 200 ") {
		if len(answer) > 200 {
			answer = answer[:200] + "..."
		}
		// The path alone: the same answer comes back to a GET and a POST.
		return "", fmt.Errorf("%s: %s answered %q", node, path, answer)
	}
	return body, nil
}
