package compare

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Shard is the I-th of N slices of a matrix's (cell, run) pairs
// (`check compare --shard I/N`), so a comparison can be spread over a CI
// matrix and put together again by Merge.
type Shard struct{ I, N int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// ParseShard reads --shard's "I/N" (1 <= I <= N); errors are
// *usage.Error naming the flag.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, errI := strconv.Atoi(a)
	n, errN := strconv.Atoi(b)
	switch {
	case !ok || errI != nil || errN != nil:
		return Shard{}, usage.Errorf("shard", "%q is not I/N: give the shard's number and the number of shards, e.g. --shard 2/3", s)
	case n < 1:
		return Shard{}, usage.Errorf("shard", "%s: the number of shards must be at least 1 (e.g. --shard 1/3)", s)
	case n > 1000:
		return Shard{}, usage.Errorf("shard", "%s: at most 1000 shards", s)
	case i < 1 || i > n:
		return Shard{}, usage.Errorf("shard", "%s: the shard's number must be from 1 to %d (e.g. --shard 1/%d)", s, n, n)
	}
	return Shard{I: i, N: n}, nil
}

// Definition is everything that defines m, one flag a line: what must
// be equal for shards to belong to one comparison. The agent binary
// (a path on one machine) is not part of it.
func (m *Matrix) Definition() []result.MatrixField {
	var rows []string
	for _, r := range m.Rows {
		rows = append(rows, r.String()+" "+string(r.Cluster))
	}
	b := m.Base
	d := func(t time.Duration) string { return t.String() }
	return []result.MatrixField{
		{Flag: "preset", Value: m.Preset},
		{Flag: "backends/storages/fencing (rows)", Value: strings.Join(rows, "; ")},
		{Flag: "faults", Value: strings.Join(m.Faults, ",")},
		{Flag: "runs", Value: strconv.Itoa(m.Runs)},
		{Flag: "time-limit", Value: d(m.TimeLimit)},
		{Flag: "seed", Value: strconv.FormatInt(m.Seed, 10)},
		{Flag: "full-time", Value: strconv.FormatBool(!b.StopOnViolation)},
		{Flag: "clients", Value: strconv.Itoa(b.Clients)},
		{Flag: "keys", Value: strconv.Itoa(b.Keys)},
		{Flag: "nodes", Value: strconv.Itoa(b.Nodes)},
		{Flag: "lease-ttl", Value: d(b.LeaseTTL)},
		{Flag: "work", Value: d(b.Work)},
		{Flag: "hold", Value: d(b.Dwell)},
		{Flag: "read-mix", Value: strconv.FormatFloat(b.ReadMix, 'g', -1, 64)},
		{Flag: "acquire-timeout", Value: d(b.AcquireTimeout)},
		{Flag: "pause-duration", Value: d(b.PauseDuration)},
		{Flag: "nemesis-interval", Value: d(b.NemesisInterval)},
		{Flag: "server-version", Value: b.ServerVersion},
		{Flag: "check-timeout", Value: d(b.CheckTimeout)},
		{Flag: "check-memory", Value: strconv.FormatInt(int64(b.CheckMemory), 10)},
	}
}

// Fingerprint names a matrix by its Definition: "sha256:<hex>".
func Fingerprint(def []result.MatrixField) string {
	h := sha256.New()
	for _, f := range def {
		fmt.Fprintf(h, "%s=%q\n", f.Flag, f.Value)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Pairs are every (cell, run) pair of m that runs, in the matrix's
// order: row by row, fault by fault, run by run.
func (m *Matrix) Pairs() []result.ComparePair {
	var out []result.ComparePair
	for i, r := range m.Rows {
		for _, f := range m.Faults {
			if m.Applicable(r, f) != "" {
				continue
			}
			for k := range m.Runs {
				out = append(out, result.ComparePair{Row: i, Fault: f, Run: k})
			}
		}
	}
	return out
}

// Setup costs that a run adds to its time limit, by cluster, for
// balancing shards: a Docker cluster is started, healed, read and torn
// down around the workload; an in-process one costs next to nothing.
var setupCost = map[registry.Cluster]time.Duration{registry.ClusterDocker: 30 * time.Second, registry.ClusterInProcess: time.Second}

// expectedDuration is what a run of a row with the given cluster is
// expected to take: its time limit plus its cluster's setup. Only the
// matrix goes into it, so every machine computes the same.
func expectedDuration(cluster registry.Cluster, timeLimit time.Duration) time.Duration {
	return timeLimit + cmp.Or(setupCost[cluster], setupCost[registry.ClusterDocker])
}

// Slice assigns pairs to n shards, greedily longest first: the pairs
// sorted by expected duration (longest first; equal ones in the
// matrix's order) each go to the shard with the least expected time so
// far (the lowest-numbered on a tie). The result is shard index (0-based)
// per pair. It depends only on the pairs, their costs and n, so every
// machine cuts a matrix the same way; no shard ends more than one pair's
// cost behind another.
func Slice(pairs []result.ComparePair, cost func(result.ComparePair) time.Duration, n int) []int {
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cost(pairs[b]), cost(pairs[a])) })
	load := make([]time.Duration, n)
	out := make([]int, len(pairs))
	for _, p := range order {
		best := 0
		for s := 1; s < n; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		out[p] = best
		load[best] += cost(pairs[p])
	}
	return out
}

// ShardPairs are the pairs of m that shard s runs, in the matrix's order.
func (m *Matrix) ShardPairs(s Shard) []result.ComparePair {
	pairs := m.Pairs()
	return pickShard(pairs, Slice(pairs, m.cost, s.N), s)
}

func (m *Matrix) cost(p result.ComparePair) time.Duration {
	return expectedDuration(m.Rows[p.Row].Cluster, m.TimeLimit)
}

func pickShard(pairs []result.ComparePair, assigned []int, s Shard) []result.ComparePair {
	var out []result.ComparePair
	for i, p := range pairs {
		if assigned[i] == s.I-1 {
			out = append(out, p)
		}
	}
	return out
}

// shardInfo is what a shard's compare.json says about it before it runs.
func (m *Matrix) shardInfo(s Shard) *result.CompareShard {
	def := m.Definition()
	return &result.CompareShard{Index: s.I, Count: s.N, Matrix: Fingerprint(def), Definition: def,
		Pairs: m.ShardPairs(s), Held: []result.ComparePair{}}
}
