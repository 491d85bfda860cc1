package backends

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Settle asks every node until the answers settle, and stops asking at
// its margin before ctx's end with the last round's answers.
func TestSettle(t *testing.T) {
	nodes := []string{"n1", "n2"}
	round := 0
	ask := func(_ context.Context, n string) (int, error) {
		if n == "n2" && round < 3 {
			return round, nil // a follower catching up
		}
		return 3, nil
	}
	got, errs := Settle(context.Background(), nodes, time.Second, ask, func(a []int, errs []error) bool {
		round++
		return errs[0] == nil && errs[1] == nil && a[0] == a[1]
	})
	if got[0] != 3 || got[1] != 3 || errs[0] != nil || round != 4 {
		t.Errorf("settled on %v after %d rounds", got, round)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, errs = Settle(ctx, nodes, time.Second, func(context.Context, string) (int, error) { return 0, errors.New("down") },
		func([]int, []error) bool { return false })
	if took := time.Since(start); took > 1200*time.Millisecond || errs[0] == nil {
		t.Errorf("a node that never answers: gave up after %s, errs %v", took, errs)
	}
}
