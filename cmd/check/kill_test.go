package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// The run the kill tests cut short: fenced storage under pauses, valid
// whenever it finishes, so a verdict of valid on its remains could only
// come from a check that took a part for the whole. 200 keys make the
// final reads last about a second, long enough to be killed in.
var killedRunArgs = []string{"--backend", "memory", "--fencing", "all", "--nemesis", "pause", "--time-limit", "2s",
	"--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--keys", "200"}

// buildCheck builds this command into a temporary directory, for tests
// that need a real process to kill.
func buildCheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "check")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building check: %v\n%s", err, out)
	}
	return bin
}

// runToKill starts bin with args and SIGKILLs it at the moment when
// says: when gets each line the run prints and returns true to kill
// there; it may also watch the store itself. It returns the run's
// directory and everything it printed. A run that ends by itself fails
// the test, unless lateOK (a kill aimed at the last milliseconds may come
// too late): then the directory is returned with ended set.
func runToKill(t *testing.T, bin, store string, args []string, lateOK bool, when func(line string) bool) (dir, out string, ended bool) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{}, args...), "--store", store)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	var printed strings.Builder
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if !killed && when(sc.Text()) {
			cmd.Process.Kill() // SIGKILL: nothing of the run's own gets to run
			killed = true
		}
	}
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	ended = !killed || !errors.As(err, &ee) || ee.ExitCode() != -1
	if ended && !lateOK {
		t.Fatalf("the run was not killed (%v):\n%s", err, printed.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(store, "memory-*", "*"))
	if len(dirs) != 1 {
		t.Fatalf("%d run directories in %s, want 1:\n%s", len(dirs), store, printed.String())
	}
	return dirs[0], printed.String(), ended
}

// after kills once a line containing s was printed, d later.
func after(s string, d time.Duration) func(string) bool {
	return func(line string) bool {
		if strings.Contains(line, s) {
			time.Sleep(d)
			return true
		}
		return false
	}
}

// nearTheEnd kills during the final reads, once the final read of the
// next-to-last key has begun: a few milliseconds before the end event.
// It follows the history as the run writes it.
func nearTheEnd(store string) func(string) bool {
	return func(line string) bool {
		if !strings.Contains(line, "final reads") {
			return false
		}
		dirs, _ := filepath.Glob(filepath.Join(store, "memory-*", "*", "history.jsonl"))
		if len(dirs) != 1 {
			return true
		}
		f, err := os.Open(dirs[0])
		if err != nil {
			return true
		}
		defer f.Close()
		// Every event written after the line "final reads" is a final
		// read; a final read of the next-to-last key that began before
		// we looked is missed, and the deadline kills at once.
		want := []byte(`"type":"invoke","f":"acquire","key":"k198"`)
		st, _ := f.Stat()
		f.Seek(st.Size(), io.SeekStart)
		r := bufio.NewReader(f)
		var partial []byte
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			b, err := r.ReadBytes('\n')
			partial = append(partial, b...)
			if err != nil {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			if bytes.Contains(partial, want) {
				return true
			}
			partial = partial[:0]
		}
		return true
	}
}

// checkRemains re-checks what a killed run left, every way fencecheck
// can: analyze, report (twice: a regenerated results.json must not
// become valid), serve's index (also after an older report had called it
// valid) and a compare merge whose shard calls the run valid. want is 2
// (unknown) for a run killed before a violation, 1 when one is already in
// its history. It returns why the history is unfinished.
func checkRemains(t *testing.T, store, dir string, want int) string {
	t.Helper()
	h, err := history.LoadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatalf("the remains do not read: %v", err)
	}
	why := h.Unfinished()
	if why == "" {
		t.Fatalf("a killed run's history reads as finished")
	}
	verdict := map[int]string{1: "INVALID", 2: "UNKNOWN"}[want]
	code, out, errOut := runCLI(t, "analyze", dir)
	if code != want || !strings.Contains(out, verdict+": ") || !strings.Contains(out, "not a finished run's") {
		t.Errorf("analyze: exit %d, want %d (%s) saying why\n%s%s", code, want, verdict, out, errOut)
	}
	for range 2 {
		code, out, errOut = runCLI(t, "report", dir)
		if code != want || !strings.Contains(out, verdict+": ") {
			t.Errorf("report: exit %d, want %d\n%s%s", code, want, out, errOut)
		}
		res, err := reports.ReadResults(filepath.Join(dir, "results.json"))
		if err != nil || res.Verdict == models.Valid || res.Unfinished == "" {
			t.Errorf("results.json after report: %+v, %v", res, err)
		}
	}
	runs, err := reports.ListRuns(os.DirFS(store))
	if err != nil || len(runs) != 1 || runs[0].Verdict == models.Valid {
		t.Errorf("serve's index: %+v, %v", runs, err)
	}
	// As an older `check report` left it: results.json saying valid.
	old, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"schema":"fencecheck/results/v1","verdict":"valid"}`), 0o644)
	runs, err = reports.ListRuns(os.DirFS(store))
	if err != nil || len(runs) != 1 || runs[0].Verdict != models.Unknown || !strings.Contains(runs[0].Explanation, "end event") {
		t.Errorf("serve's index of a run called valid by an older report: %+v, %v", runs, err)
	}
	os.WriteFile(filepath.Join(dir, "results.json"), old, 0o644)
	return why
}

// A run killed with SIGKILL — early in its workload, in the middle, during
// its final reads, a few milliseconds before its end — is never re-checked
// as valid by analyze, report, serve's index or a compare merge: unknown,
// with the reason. One killed after the live check found a violation
// stays invalid. The same run left to finish is valid everywhere.
func TestKilledRunIsNeverValid(t *testing.T) {
	bin := buildCheck(t)

	// The run finished: valid, everywhere.
	finished := t.TempDir()
	cmd := exec.Command(bin, append(append([]string{}, killedRunArgs...), "--store", finished, "--seed", "11")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the finished run: %v\n%s", err, out)
	}
	dir := filepath.Join(finished, "latest")
	if code, out, _ := runCLI(t, "analyze", dir); code != 0 || !regexp.MustCompile(`(?m)^VALID[:,] `).MatchString(out) {
		t.Errorf("analyze of a finished run: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "report", dir); code != 0 {
		t.Errorf("report of a finished run: exit %d\n%s", code, out)
	}
	if runs, err := reports.ListRuns(os.DirFS(finished)); err != nil || len(runs) != 1 || runs[0].Verdict != models.Valid {
		t.Errorf("serve's index of a finished run: %+v, %v", runs, err)
	}

	for _, c := range []struct {
		name   string
		when   func(store string) func(string) bool
		args   []string
		want   int
		lateOK bool
	}{
		{"early in the workload", func(string) func(string) bool { return after("workload:", 300*time.Millisecond) }, killedRunArgs, 2, false},
		{"mid-workload", func(string) func(string) bool { return after("workload:", time.Second) }, killedRunArgs, 2, false},
		{"during the final reads", func(string) func(string) bool { return after("final reads", 100*time.Millisecond) }, killedRunArgs, 2, false},
		{"just before the end", nearTheEnd, killedRunArgs, 2, true},
		{"after a violation", func(string) func(string) bool { return after("violation found while the test runs", 0) },
			[]string{"--backend", "memory", "--fencing", "none", "--nemesis", "pause-holder", "--time-limit", "20s", "--lease-ttl", "200ms", "--nemesis-interval", "400ms"}, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := t.TempDir()
			dir, out, ended := runToKill(t, bin, store, append(append([]string{}, c.args...), "--seed", "11"), c.lateOK, c.when(store))
			if h, err := history.LoadFile(filepath.Join(dir, "history.jsonl")); c.lateOK && err == nil && h.Unfinished() == "" {
				// The kill came after the end event (or not at all): the
				// run finished, and valid is right. The moment just
				// before the end is cut for certain in
				// TestTruncatedHistoryIsNeverValid.
				t.Logf("the kill came too late: the run had finished (ended %v); nothing to check", ended)
				return
			}
			why := checkRemains(t, store, dir, c.want)
			t.Logf("killed %s: %s", c.name, why)
			if t.Failed() {
				t.Logf("the run printed:\n%s", out)
			}
		})
	}
}

// What a kill at any byte of a finished run's history would leave — the
// end event missing, cut, or the file cut anywhere before it — is
// re-checked as unknown, never valid, by analyze and report alike.
func TestTruncatedHistoryIsNeverValid(t *testing.T) {
	store := t.TempDir()
	args := append(append([]string{}, killedRunArgs...), "--keys", "5", "--store", store, "--seed", "5")
	if code, out, _ := runCLI(t, args...); code != 0 {
		t.Fatalf("the run: exit %d\n%s", code, out)
	}
	dir := filepath.Join(store, "latest")
	whole, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	endAt := bytes.LastIndex(bytes.TrimSuffix(whole, []byte("\n")), []byte("\n")) + 1
	if !bytes.HasPrefix(whole[endAt:], []byte(`{"index":`)) || !bytes.Contains(whole[endAt:], []byte(`"type":"end"}`)) {
		t.Fatalf("the finished run's last line is not the end event: %q", whole[endAt:])
	}
	cuts := map[string]int{
		"the end event's newline": len(whole) - 1,
		"inside the end event":    endAt + 12,
		"before the end event":    endAt,
		"inside the last op":      endAt - 20,
		"a third of the way":      len(whole) / 3,
		"after the first line":    bytes.IndexByte(whole, '\n') + 1,
	}
	for name, n := range cuts {
		body := whole[:n]
		if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), body, 0o644); err != nil {
			t.Fatal(err)
		}
		wantCode := 2
		if name == "the end event's newline" {
			wantCode = 0 // the end event whole: only its newline is gone
		}
		code, out, errOut := runCLI(t, "analyze", dir)
		if code != wantCode {
			t.Errorf("cut %s (byte %d of %d): analyze exit %d, want %d\n%s%s", name, n, len(whole), code, wantCode, out, errOut)
		}
		code, out, errOut = runCLI(t, "report", dir)
		if code != wantCode {
			t.Errorf("cut %s: report exit %d, want %d\n%s%s", name, code, wantCode, out, errOut)
		}
		if wantCode == 2 && !strings.Contains(out, "UNKNOWN: the history is not a finished run's") {
			t.Errorf("cut %s: report does not say why:\n%s", name, out)
		}
	}
}

// A comparison shard killed in the middle of its run, and a shard whose
// compare.json calls valid a run whose history did not finish: the merge
// says what is missing or unfinished and exits 2, never counting the run
// valid. The same shard whole merges valid, exit 0.
func TestMergeOfKilledShardIsNeverValid(t *testing.T) {
	bin := buildCheck(t)
	shardArgs := []string{"compare", "--backends", "memory", "--storages", "fenced", "--fencing", "all", "--faults", "pause",
		"--time-limit", "2s", "--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--seed", "3", "--shard", "1/1", "--parallel", "1"}
	root := t.TempDir()
	whole := filepath.Join(root, "shard-whole")
	if out, err := exec.Command(bin, append(append([]string{}, shardArgs...), "--store", whole)...).CombinedOutput(); err != nil {
		t.Fatalf("the shard: %v\n%s", err, out)
	}
	merge := func(shard string) (int, string) {
		code, out, errOut := runCLI(t, "compare", "merge", "--out", filepath.Join(root, "merged"), shard)
		return code, out + errOut
	}
	if code, out := merge(whole); code != 0 {
		t.Fatalf("merge of the whole shard: exit %d\n%s", code, out)
	}

	// A shard of two cells killed in the middle of its second run (one
	// run at a time): the first is merged, the second is missing, none is
	// valid that did not finish.
	killed := filepath.Join(root, "shard-killed")
	two := append(append([]string{}, shardArgs...), "--store", killed)
	for i, a := range two {
		if a == "all" && two[i-1] == "--fencing" {
			two[i] = "all,writes"
		}
	}
	cmd := exec.Command(bin, two...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if hs, _ := filepath.Glob(filepath.Join(killed, "*", "*", "history.jsonl")); len(hs) == 2 {
			time.Sleep(time.Second)
			once.Do(func() { cmd.Process.Kill() })
			break
		}
	}
	once.Do(func() { cmd.Process.Kill() })
	cmd.Wait()
	code, out := merge(killed)
	if code != 2 || !strings.Contains(out, "1 run missing") {
		t.Errorf("merge of a shard killed in its second run: exit %d, want 2 and the run missing\n%s", code, out)
	}

	// The whole shard's run, its history replaced by what the killed
	// run left: its compare.json still says valid, the history does not.
	var cut []byte
	hs, _ := filepath.Glob(filepath.Join(killed, "*", "*", "history.jsonl"))
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(filepath.Dir(h), "results.json")); err != nil {
			cut, _ = os.ReadFile(h)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(whole, "*", "*", "history.jsonl"))
	if cut == nil || len(runs) != 1 {
		t.Fatalf("histories: killed %v, whole %v", hs, runs)
	}
	if err := os.WriteFile(runs[0], cut, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = merge(whole)
	if code != 2 || !strings.Contains(out, "not shown to have finished") || !strings.Contains(out, "does not end with the end event") {
		t.Errorf("merge of a shard whose valid run did not finish: exit %d, want 2 saying why\n%s", code, out)
	}
	var c struct {
		Unfinished []string
		Rows       []struct {
			Cells []struct{ Verdicts map[string]int }
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "merged", "compare.json"))
	if err := json.Unmarshal(b, &c); err != nil || len(c.Unfinished) != 1 || c.Rows[0].Cells[0].Verdicts["valid"] != 0 || c.Rows[0].Cells[0].Verdicts["unknown"] != 1 {
		t.Errorf("merged compare.json: %s", b)
	}
	md, _ := os.ReadFile(filepath.Join(root, "merged", "compare.md"))
	if !strings.Contains(string(md), "not shown to have finished") {
		t.Errorf("compare.md does not list the unfinished run")
	}
}
