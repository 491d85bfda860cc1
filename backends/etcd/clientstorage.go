package etcd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/lockclient"
)

// clientStorage lets a --client program keep the resource in etcd itself,
// at DataPrefix+key, behind its own guarded transaction (etcd's
// recommendation: If the lock key still exists with its create revision,
// Then put). fencecheck reads the final values itself, inside a server
// node, never through the program.
var clientStorage = &registry.ClientStorage{
	Describe: func(_, _ string, endpoints []string) lockclient.Storage {
		return lockclient.Storage{Backend: "etcd", Fencing: lockclient.FencingClient, Endpoints: endpoints, Prefix: DataPrefix}
	},
	Read: func(ctx context.Context, c nodes.Nodes, endpoints []string, key string) (int64, error) {
		var errs []string
		for _, e := range endpoints {
			u, err := url.Parse(e)
			if err != nil {
				continue
			}
			n := u.Hostname()
			v, err := rangeValue(ctx, c, n, DataPrefix+key)
			if err == nil {
				return v, nil
			}
			errs = append(errs, err.Error())
		}
		return 0, fmt.Errorf("no etcd member answered the read of %s%s: %s", DataPrefix, key, strings.Join(errs, "; "))
	},
}

// rangeValue reads one key, linearizably, from the server in node through
// etcd's JSON gateway (as memberStatus asks): a missing key is 0.
func rangeValue(ctx context.Context, c nodes.Nodes, node, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"key":%q}`, base64.StdEncoding.EncodeToString([]byte(key)))
	req := fmt.Sprintf(`POST /v3/kv/range HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s`, len(body), body)
	res, err := c.Exec(ctx, node, []string{"timeout", "4", "bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf '%s' >&3 && cat <&3`, ClientPort, req)})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return 0, fmt.Errorf("%s: range exit %d: %s", node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return parseRange(node, res.Stdout)
}

// parseRange reads the gateway's answer to a range of one key.
func parseRange(node, answer string) (int64, error) {
	_, body, ok := strings.Cut(answer, "\r\n\r\n")
	if !ok || !strings.Contains(strings.SplitN(answer, "\r\n", 2)[0], " 200 ") {
		return 0, fmt.Errorf("%s: range answered %q", node, tailOf(answer, 200))
	}
	var r struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return 0, fmt.Errorf("%s: range answered %q: %w", node, tailOf(body, 200), err)
	}
	if len(r.Kvs) == 0 {
		return 0, nil
	}
	raw, err := base64.StdEncoding.DecodeString(r.Kvs[0].Value)
	if err != nil {
		return 0, fmt.Errorf("%s: range value %q is not base64", node, r.Kvs[0].Value)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the value at the key is %q, not a decimal integer (the client must write the value as decimal text)", tailOf(string(raw), 40))
	}
	return v, nil
}
