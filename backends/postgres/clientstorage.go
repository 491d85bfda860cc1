package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/lockclient"
)

// ClientTable is the table a --client program writes with its own SQL:
// StorageSchema's registers (key, value, fence), a row per key made before
// the workload, value 0 and fence 0. The program keeps its fence in the
// fence column (or anywhere else it likes); fencecheck reads only value.
const ClientTable = "fencecheck_registers"

// clientStorage lets a --client program write the storage server's table
// itself: fencecheck makes the rows, hands the program the URL, table and
// credentials, and reads the final values through psql in the storage
// node, never through the program.
var clientStorage = &registry.ClientStorage{
	Prepare: func(ctx context.Context, c nodes.Nodes, keys []string) error {
		var rows []string
		for _, k := range keys {
			rows = append(rows, "("+quote(k)+")")
		}
		_, err := storageSQL(ctx, c, fmt.Sprintf("INSERT INTO %s (key) VALUES %s ON CONFLICT (key) DO NOTHING;\n", ClientTable, strings.Join(rows, ", ")))
		return err
	},
	Describe: func(url, secret string, _ []string) lockclient.Storage {
		return lockclient.Storage{Backend: "postgres", URL: url, Fencing: lockclient.FencingClient,
			Table: ClientTable, User: User, Password: secret}
	},
	Read: func(ctx context.Context, c nodes.Nodes, _ []string, key string) (int64, error) {
		out, err := storageSQL(ctx, c, fmt.Sprintf("SELECT value FROM %s WHERE key = %s;\n", ClientTable, quote(key)))
		if err != nil {
			return 0, err
		}
		return parseValue(out)
	},
}

// parseValue reads psql's unaligned output of one bigint: no row is 0.
func parseValue(out string) (int64, error) {
	out = strings.TrimSpace(out)
	if out == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("psql answered %q, not one value", firstLine(out))
	}
	return v, nil
}

// quote is a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// storageSQL runs SQL as the superuser over the storage node's local
// socket and returns psql's unaligned, tuples-only output.
func storageSQL(ctx context.Context, c nodes.Nodes, sql string) (string, error) {
	res, err := c.ExecWith(ctx, nodes.StorageNode, []string{BinDir + "/psql",
		"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", SocketDir, "-p", fmt.Sprint(Port), "-d", Database, "-f", "-"},
		nodes.ExecOptions{User: User, Stdin: strings.NewReader(sql)})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("psql in %s exited %d: %s", nodes.StorageNode, res.ExitCode, strings.TrimSpace(res.Stdout+"\n"+res.Stderr))
	}
	return res.Stdout, nil
}
