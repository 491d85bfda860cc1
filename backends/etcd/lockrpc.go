package etcd

import (
	"context"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
)

// lockRPC asks the server's Lock RPC (the v3lock service every etcd since
// 3.2 serves, behind `etcdctl lock`) to lock name for lease: the server
// creates a key under name attached to the lease, waits until it is the
// oldest, and answers with that key. The lease stays the client's: it
// keeps it alive, and the lock ends when the lease does.
func lockRPC(ctx context.Context, cli *clientv3.Client, name string, lease clientv3.LeaseID) (string, error) {
	conn := cli.ActiveConnection()
	if conn == nil {
		return "", errors.New("no connection to any etcd endpoint")
	}
	resp, err := v3lockpb.NewLockClient(conn).Lock(ctx, &v3lockpb.LockRequest{Name: []byte(name), Lease: int64(lease)})
	if err != nil {
		return "", err
	}
	if len(resp.Key) == 0 {
		return "", errors.New("the Lock RPC answered without a key")
	}
	return string(resp.Key), nil
}

// unlockRPC asks the server's Unlock RPC to release the lock whose
// ownership key Lock returned (it deletes the key).
func unlockRPC(ctx context.Context, cli *clientv3.Client, key string) error {
	conn := cli.ActiveConnection()
	if conn == nil {
		return errors.New("no connection to any etcd endpoint")
	}
	_, err := v3lockpb.NewLockClient(conn).Unlock(ctx, &v3lockpb.UnlockRequest{Key: []byte(key)})
	return err
}
