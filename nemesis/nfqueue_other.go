//go:build !linux

package nemesis

import (
	"context"
	"errors"
)

// Serve needs Linux's netfilter queues.
func (d Delayer) Serve(context.Context, func()) (DelayStats, error) {
	return DelayStats{}, errors.New("the delayer needs Linux (netfilter queues)")
}
