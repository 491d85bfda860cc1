package compose

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Two steps writing side by side, in pieces that end mid-line, must leave
// every line whole.
func TestLineSinkKeepsLinesWhole(t *testing.T) {
	var out bytes.Buffer
	sink := &lineSink{w: &out}
	var wg sync.WaitGroup
	for step := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := sink.writer()
			defer w.Close()
			for i := range 200 {
				fmt.Fprintf(w, "step %d ", step)
				fmt.Fprintf(w, "line %d\n", i)
			}
			fmt.Fprintf(w, "step %d unfinished", step)
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 402 {
		t.Fatalf("%d lines, want 402", len(lines))
	}
	for _, l := range lines {
		var step, i int
		if _, err := fmt.Sscanf(l, "step %d line %d", &step, &i); err != nil && !strings.HasSuffix(l, "unfinished") {
			t.Fatalf("a line was cut: %q", l)
		}
	}
}

func TestEtcd36CachePath(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	a, b := etcdCachePath("3.6", "amd64"), etcdCachePath("3.6", "arm64")
	if a == "" || a == b || !strings.Contains(a, "fencecheck") || !strings.HasSuffix(a, "linux-amd64") {
		t.Fatalf("cache paths %q, %q", a, b)
	}
	if err := writeAtomically(a, []byte("etcd")); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	got, err := cachedEtcd(t.Context(), "3.6", "amd64", &progress)
	if err != nil || string(got) != "etcd" || !strings.Contains(progress.String(), "from the cache") {
		t.Fatalf("cached binary %q, %v, progress %q", got, err, progress.String())
	}
}
