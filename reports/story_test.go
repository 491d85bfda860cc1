package reports

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

func kinds(steps []Step) string {
	var ks []string
	for _, s := range steps {
		ks = append(ks, s.Kind)
	}
	return strings.Join(ks, " ")
}

// A paused holder's stale write, from a long history: the holder is frozen, another
// process takes over, the stale write is admitted and overwrites an
// update; everything else is summed up.
func TestStoryOfAStaleWrite(t *testing.T) {
	r := synthetic(t, 20_000, false)
	steps := Story(r, &r.Result.Keys[0])
	if len(steps) < 5 || len(steps) > 30 {
		t.Fatalf("%d steps: %s", len(steps), kinds(steps))
	}
	order := []string{"holder", "fault", "takeover", "meanwhile", "culprit", "lost", "after"}
	i := 0
	for _, s := range steps {
		if i < len(order) && s.Kind == order[i] {
			i++
		}
	}
	if i != len(order) {
		t.Errorf("the story does not go %v: %s", order, kinds(steps))
	}
	text := ""
	for _, s := range steps {
		text += history.Seconds(s.Time) + " " + s.Text + "\n"
	}
	for _, want := range []string{"froze c2", "took the lease on k0 over", "a stale lease holder's write got through", "update is lost", "updates were lost over the run"} {
		if !strings.Contains(text, want) {
			t.Errorf("the story lacks %q:\n%s", want, text)
		}
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].Kind != "after" && steps[i].Time < steps[i-1].Time {
			t.Errorf("step %d goes back in time:\n%s", i, text)
		}
	}
}

func TestStoryOfATokenThatWentBackwards(t *testing.T) {
	events := []history.Event{
		{Index: 0, Time: 1e6, Process: 0, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Index: 1, Time: 2e6, Process: 0, Type: history.OK, F: history.Acquire, Key: "k0", Token: 5},
		{Index: 2, Time: 3e6, Process: 0, Type: history.Invoke, F: history.Release, Key: "k0", Token: 5},
		{Index: 3, Time: 4e6, Process: 0, Type: history.OK, F: history.Release, Key: "k0", Token: 5},
		{Index: 4, Time: 5e6, Process: 1, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Index: 5, Time: 6e6, Process: 1, Type: history.OK, F: history.Acquire, Key: "k0", Token: 4},
	}
	ops, _ := history.Pair(events)
	r := &Run{Events: events, Ops: ops}
	k := models.KeyResult{Key: "k0", Verdict: models.Invalid, Culprits: []int64{4, 0}}
	steps := Story(r, &k)
	if len(steps) == 0 || steps[len(steps)-1].Kind != "culprit" || !strings.Contains(steps[len(steps)-1].Text, "tokens must only increase") {
		t.Fatalf("story: %+v", steps)
	}
}

// A valid key, or an invalid one whose culprits are unknown, has no story.
func TestNoStoryWithoutCulprits(t *testing.T) {
	r := synthetic(t, 1000, false)
	for _, k := range []models.KeyResult{{Key: "k0", Verdict: models.Valid}, {Key: "k0", Verdict: models.Invalid}} {
		if s := Story(r, &k); s != nil {
			t.Errorf("%s key without culprits has a story: %+v", k.Verdict, s)
		}
	}
}
