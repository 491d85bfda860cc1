package redis

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestNodeOutcomeIsHonest(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want answer
	}{
		{"answered", nil, yes},
		{"error reply", fmt.Errorf("wrapped: %w", goredis.ErrNoScript), no},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, no},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, no},
		{"no connection in the pool", goredis.ErrPoolTimeout, no},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, unknown},
		{"context deadline", context.DeadlineExceeded, unknown},
		{"connection lost after sending", io.EOF, unknown},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, unknown},
	} {
		if got := nodeOutcome(c.err); got != c.want {
			t.Errorf("%s (%v): %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

func TestRecipesAndPersistence(t *testing.T) {
	for recipe, want := range map[string]int{SetNX: 1, SetNXIncr: 1, Redlock: 5} {
		if n, err := Servers(recipe); err != nil || n != want {
			t.Errorf("Servers(%s) = %d, %v; want %d", recipe, n, err, want)
		}
	}
	if _, err := Servers("mutex"); err == nil {
		t.Error("an unknown recipe was accepted")
	}
	args, _ := persistenceArgs("none")
	if !slices.Equal(args, []string{"--save", "", "--appendonly", "no"}) {
		t.Errorf("none: %q", args)
	}
	for _, p := range append(Persistences, "") {
		if err := CheckPersistence(p); err != nil {
			t.Error(err)
		}
	}
	if err := CheckPersistence("aof"); err == nil {
		t.Error("an unknown persistence was accepted")
	}
}

func TestQuorumAndTimeouts(t *testing.T) {
	five := make([]*goredis.Client, 5)
	m := newMasters(Redlock, five, make([]string, 5), 2*time.Second)
	if m.quorum != 3 || m.nodeTimeout != 200*time.Millisecond || m.drift != 22*time.Millisecond || m.tokens {
		t.Errorf("redlock: quorum %d, node timeout %s, drift %s, tokens %v", m.quorum, m.nodeTimeout, m.drift, m.tokens)
	}
	one := newMasters(SetNXIncr, make([]*goredis.Client, 1), make([]string, 1), 2*time.Second)
	if one.quorum != 1 || one.nodeTimeout != 0 || !one.tokens {
		t.Errorf("setnx-incr: quorum %d, node timeout %s, tokens %v", one.quorum, one.nodeTimeout, one.tokens)
	}
}
