package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

func rateFlags() flags {
	return flags{rateBackends: "etcd,zookeeper,postgres,redis,kubernetes", rateTime: 40 * time.Second, rateUnfencedTime: 20 * time.Second, rateSeeds: 5}
}

func TestExposureRateFlags(t *testing.T) {
	o, err := exposureRateFlags(rateFlags())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.backends, ",") != "etcd,zookeeper,postgres,redis,kubernetes" || o.timeLimit != 40*time.Second || o.unfencedTime != 20*time.Second || o.seeds != 5 {
		t.Errorf("defaults read as %+v", o)
	}
	f := rateFlags()
	f.rateBackends, f.rateUnfencedTime = " etcd , redis", 0
	if o, err := exposureRateFlags(f); err != nil || strings.Join(o.backends, ",") != "etcd,redis" || o.unfencedTime != 0 {
		t.Errorf("%q with no unfenced runs: %+v, %v", f.rateBackends, o, err)
	}
	for _, tc := range []struct {
		change func(*flags)
		want   string
	}{
		{func(f *flags) { f.rateBackends = "etcd,mysql" }, `--exposure-rate-backends: "mysql" is not a backend that runs in Docker`},
		{func(f *flags) { f.rateBackends = "" }, `--exposure-rate-backends: "" is not a backend`},
		{func(f *flags) { f.rateBackends = "etcd,," }, `--exposure-rate-backends: "" is not a backend`},
		{func(f *flags) { f.rateBackends = "redis,etcd,redis" }, "--exposure-rate-backends: redis is named twice"},
		{func(f *flags) { f.rateTime = 0 }, "--exposure-rate-time: 0s is out of range (accepted: 1s to 24h"},
		{func(f *flags) { f.rateTime = 500 * time.Millisecond }, "--exposure-rate-time: 500ms is out of range"},
		{func(f *flags) { f.rateTime = 25 * time.Hour }, "--exposure-rate-time: 25h0m0s is out of range"},
		{func(f *flags) { f.rateUnfencedTime = -time.Second }, "--exposure-rate-unfenced-time: -1s is out of range (accepted: 0 for no unfenced runs"},
		{func(f *flags) { f.rateSeeds = 0 }, "--exposure-rate-seeds: 0 is not a number of runs"},
	} {
		f := rateFlags()
		tc.change(&f)
		if _, err := exposureRateFlags(f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", f, err, tc.want)
		}
	}
}

// Both sides are the main command's run with its defaults: today's is
// check --nemesis pause-holder, the other the ci-bound preset's flags
// (harness.CIBound), each with the group's time limit and fencing.
func TestRateConfig(t *testing.T) {
	today := rateConfig("redis", rateSchedules[0], "all", 40*time.Second, 3, "/s")
	if today.Recipe != "setnx-incr" || today.Fencing != "all" || today.Keys != 1 || today.Clients != 5 || today.NemesisInterval != 2*time.Second ||
		today.TimeLimit != 40*time.Second || today.LeaseTTL != 2*time.Second || len(today.Options) != 0 || today.Seed != 3 || today.Store != "/s" ||
		strings.Join(today.Nemesis, ",") != "pause-holder" || today.StopOnViolation {
		t.Errorf("today's schedule: %+v", today)
	}
	ci := rateConfig("etcd", rateSchedules[1], "none", 3*time.Minute, 1, "/s")
	if ci.Recipe != "" || ci.Fencing != "none" || ci.Keys != 10 || ci.Clients != 20 || ci.NemesisInterval != 500*time.Millisecond ||
		ci.TimeLimit != 3*time.Minute || ci.Options["holders-at-once"] != "10" || ci.Options["pause-until"] != "granted" ||
		strings.Join(ci.Nemesis, ",") != "pause-holder" || ci.StopOnViolation {
		t.Errorf("ci-bound's schedule: %+v", ci)
	}
	if pg := rateConfig("postgres", rateSchedules[1], "all", time.Minute, 1, ""); pg.Recipe != "lease" || pg.TimeLimit != time.Minute {
		t.Errorf("postgres: %+v", pg)
	}
}

// summarizeRun reads the counts, the workload and the freezes (the
// pause-holder intervals that ended, without error) from the result in
// memory, and the first violation of an invalid run.
func TestSummarizeRun(t *testing.T) {
	s := int64(time.Second)
	out := &harness.RunResult{Dir: "/store/x/1", Workload: 30 * time.Second,
		Result: models.Result{Verdict: models.Valid, Exposures: &models.Exposures{ExposureCounts: models.ExposureCounts{Exposures: 7, Refused: 7}}},
		Report: &reports.Run{Faults: []history.Fault{
			{F: "pause-holder", Start: 1 * s, End: 3 * s},
			{F: "pause-holder", Start: 2 * s, End: 6 * s},
			{F: "pause-holder", Start: 4 * s, End: 5 * s},
			{F: "pause-holder", Start: 9 * s, End: math.MaxInt64},             // never healed
			{F: "pause-holder", Start: 9 * s, End: 9 * s, Error: "no holder"}, // failed
			{F: "partition", Start: 1 * s, End: 20 * s},
		}}}
	r := summarizeRun(out)
	if r.verdict != models.Valid || r.counts.Exposures != 7 || r.workload != 30*time.Second || r.dir != "/store/x/1" || r.found {
		t.Errorf("%+v", r)
	}
	if len(r.freezes) != 3 || medianDuration(r.freezes) != 2*time.Second {
		t.Errorf("freezes %v, want 2 s, 4 s and 1 s", r.freezes)
	}
	if got := r.perMinute(); got != 14 {
		t.Errorf("7 in 30 s: %v a minute, want 14", got)
	}
	if got := (rateRun{}).perMinute(); got != -1 {
		t.Errorf("no workload: %v a minute, want -1", got)
	}
}

func TestFencedRow(t *testing.T) {
	ci := rateSchedules[1]
	r := rateRun{verdict: models.Valid, counts: models.ExposureCounts{Exposures: 498, Refused: 498}, workload: 3 * time.Minute,
		freezes: []time.Duration{2 * time.Second, 2400 * time.Millisecond, 3 * time.Second}, dir: "/store/etcd/1"}
	row := fencedRow("etcd", ci, 3*time.Minute, r, fencedGoal("etcd", ci, 3*time.Minute))
	if row.value != 166 || row.unit != "/min" || !row.pass || row.goal != "valid, 0 admitted, >= 100/min, bound <= 1 %" {
		t.Errorf("%+v", row)
	}
	if !strings.HasPrefix(row.name, "exposure rate, etcd, fenced, ci-bound (10 keys, 20 clients, 10 at once, pause-until granted, nemesis-interval 500ms), 3m0s") {
		t.Errorf("name %q", row.name)
	}
	want := "valid; 498 exposures in 3.0 min of workload: 0 admitted, 498 refused; 0 of 498 admitted: at most 0.6 % per exposure (95 %); median freeze 2.4 s of 3; /store/etcd/1"
	if row.note != want {
		t.Errorf("note\n got %s\nwant %s", row.note, want)
	}

	// 40 s of the preset cannot reach 1 %: only the rate is a goal; on
	// another backend only the known answer.
	if g := fencedGoal("etcd", ci, 40*time.Second); g.String() != "valid, 0 admitted, >= 100/min" {
		t.Errorf("etcd, 40 s: %s", g)
	}
	for _, g := range []rateGoal{fencedGoal("zookeeper", ci, 3*time.Minute), fencedGoal("etcd", rateSchedules[0], 3*time.Minute)} {
		if g.String() != "valid, 0 admitted" {
			t.Errorf("goal %s", g)
		}
	}

	// What fails: a slower rate, an admitted late write, a bound above
	// 1 %, a verdict other than valid.
	slow := r
	slow.counts = models.ExposureCounts{Exposures: 270, Refused: 270}
	admitted := r
	admitted.counts = models.ExposureCounts{Exposures: 498, Refused: 497, Admitted: 1}
	loose := r
	loose.counts = models.ExposureCounts{Exposures: 320, Refused: 100, Unknown: 220}
	unknown := r
	unknown.verdict, unknown.incomplete = models.Unknown, "the final reads were cut short"
	for name, x := range map[string]rateRun{"90 a minute": slow, "one admitted": admitted, "100 decided": loose, "unknown": unknown} {
		if row := fencedRow("etcd", ci, 3*time.Minute, x, fencedGoal("etcd", ci, 3*time.Minute)); row.pass {
			t.Errorf("%s passed: %+v", name, row)
		}
	}
	if row := fencedRow("etcd", ci, 3*time.Minute, loose, fencedGoal("etcd", ci, 3*time.Minute)); !strings.Contains(row.note, "100 refused, 0 not sent, 220 unknown") {
		t.Errorf("undecided exposures not in the note: %s", row.note)
	}
	if row := fencedRow("etcd", ci, 3*time.Minute, unknown, rateGoal{}); !strings.Contains(row.note, "unknown; ") || !strings.Contains(row.note, "incomplete: the final reads were cut short") {
		t.Errorf("an incomplete run's note: %s", row.note)
	}
	redis := fencedRow("redis", rateSchedules[0], 40*time.Second, rateRun{verdict: models.Valid, counts: models.ExposureCounts{Exposures: 6, Refused: 6}, workload: 40 * time.Second}, rateGoal{})
	if redis.value != 9 || !redis.pass || !strings.HasPrefix(redis.name, "exposure rate, redis setnx-incr, fenced, today (pause-holder, 1 key, 5 clients), 40s") || strings.Contains(redis.note, "median freeze") {
		t.Errorf("%+v", redis)
	}
}

func TestUnfencedRow(t *testing.T) {
	run := func(v models.Verdict, first time.Duration) rateRun {
		return rateRun{verdict: v, first: first, found: first > 0, workload: 20 * time.Second,
			counts: models.ExposureCounts{Exposures: 3, Admitted: 3}}
	}
	today := []rateRun{run(models.Invalid, 5100*time.Millisecond), run(models.Invalid, 4900*time.Millisecond), run(models.Invalid, 6*time.Second),
		run(models.Invalid, 4*time.Second), run(models.Invalid, 5*time.Second)}
	row := unfencedRow(rateSchedules[0], 20*time.Second, today, nil, "/store")
	if row.value != 5 || !row.pass || row.goal != "invalid, every seed" || row.unit != "s" {
		t.Errorf("%+v", row)
	}
	if row.name != "exposure rate, etcd, unfenced, today, 5 seeds of 20s: median time to the first violation" {
		t.Errorf("name %q", row.name)
	}
	if want := "5 of 5 invalid; first violations 4.0, 4.9, 5.0, 5.1, 6.0 s; 9 exposures a minute of workload, 15 of 15 admitted; runs in /store"; row.note != want {
		t.Errorf("note\n got %s\nwant %s", row.note, want)
	}
	med, ok := medianFirst(today)
	if !ok || med != 5*time.Second {
		t.Fatalf("median %s", med)
	}
	ci := []rateRun{run(models.Invalid, 3*time.Second), run(models.Invalid, 2*time.Second), run(models.Invalid, 9*time.Second)}
	if row := unfencedRow(rateSchedules[1], 20*time.Second, ci, &med, "/store"); row.value != 3 || !row.pass || row.goal != "<= today's, invalid every seed" ||
		!strings.Contains(row.note, "today's median 5.0 s") || !strings.HasPrefix(row.name, "exposure rate, etcd, unfenced, ci-bound, 3 seeds") {
		t.Errorf("%+v", row)
	}
	later := []rateRun{run(models.Invalid, 6*time.Second)}
	if row := unfencedRow(rateSchedules[1], 20*time.Second, later, &med, "/store"); row.pass {
		t.Errorf("a later first violation passed: %+v", row)
	}
	missed := append([]rateRun{run(models.Valid, 0)}, today[1:]...)
	if row := unfencedRow(rateSchedules[0], 20*time.Second, missed, nil, "/store"); row.pass || !strings.HasPrefix(row.note, "4 of 5 invalid") {
		t.Errorf("a valid unfenced run passed: %+v", row)
	}
	none := []rateRun{run(models.Valid, 0), run(models.Unknown, 0)}
	if row := unfencedRow(rateSchedules[0], 20*time.Second, none, nil, "/store"); row.pass || row.value != -1 || !strings.HasPrefix(row.note, "0 of 2 invalid; no first violation found") {
		t.Errorf("%+v", row)
	}
}
