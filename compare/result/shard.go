package result

import (
	"encoding/json"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/jsonerr"
	"github.com/fencecheck/fencecheck/internal/words"
	"os"
	"strings"
)

// CompareShard marks a comparison as one shard of a matrix split over
// several machines (`check compare --shard I/N`): which matrix, which
// slice, and which (cell, run) pairs it was given and ran. `check compare
// merge` combines the shards' compare.json files into the comparison one
// machine would have written.
type CompareShard struct {
	// Index is I (from 1), Count N.
	Index int `json:"index"`
	Count int `json:"count"`
	// Matrix is the fingerprint of Definition: shards of one matrix
	// have the same.
	Matrix string `json:"matrix"`
	// Definition is everything that defines the matrix, one flag a line,
	// so a merge can name how two shards' matrices differ.
	Definition []MatrixField `json:"definition"`
	// Pairs are the (cell, run) pairs this shard was given, in the order
	// it runs them; Held those it ran (their results are the runs of
	// the comparison's cells, told apart by seed).
	Pairs []ComparePair `json:"pairs"`
	Held  []ComparePair `json:"held"`
}

// String is "I/N".
func (s *CompareShard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// MatrixField is one value that defines a matrix, named by its flag
// (e.g. "time-limit", "20s").
type MatrixField struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// ComparePair is one run of one cell: row Row (an index into
// Comparison.Rows) under Fault, run Run (from 0; its seed is the
// comparison's Seed+Run).
type ComparePair struct {
	Row   int    `json:"row"`
	Fault string `json:"fault"`
	Run   int    `json:"run"`
}

// CompareSource is one shard a merged comparison was made from.
type CompareSource struct {
	Shard string `json:"shard"`
	// Dir is the shard's directory relative to the merged comparison's.
	Dir  string `json:"dir"`
	Runs int    `json:"runs"`
	// DurationS is the shard's own wall time.
	DurationS float64 `json:"duration_s"`
}

// CompareMissing is a run a merged comparison lacks: the shard that
// should have run it did not come back, or stopped before it.
type CompareMissing struct {
	Shard   string `json:"shard"`
	Backend string `json:"backend"`
	Recipe  string `json:"recipe"`
	Storage string `json:"storage"`
	Fencing string `json:"fencing"`
	Fault   string `json:"fault"`
	// Run counts from 1, as the tables do.
	Run int `json:"run"`
}

func (m CompareMissing) String() string {
	return fmt.Sprintf("%s %s %s %s × %s, run %d (shard %s)", m.Backend, m.Recipe, m.Storage, m.Fencing, m.Fault, m.Run, m.Shard)
}

// ReadComparison reads a compare.json (a whole comparison, a shard's or
// a merged one); it refuses another schema.
func ReadComparison(path string) (*Comparison, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Comparison
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %s", path, jsonerr.Message(b, err))
	}
	if c.Schema != CompareSchema {
		return nil, fmt.Errorf("%s: schema %q is not %s", path, c.Schema, CompareSchema)
	}
	return &c, nil
}

// ShardNote says what a shard's or a merged comparison's page must add:
// "" for a comparison run on one machine.
func (c *Comparison) ShardNote() string {
	switch {
	case c.Shard != nil:
		return fmt.Sprintf("Shard %s of a split comparison (matrix %s): it holds %d of its own %d runs; "+
			"cells of other shards read \"not run\" here. `check compare merge` combines the shards.",
			c.Shard, shortFingerprint(c.Shard.Matrix), len(c.Shard.Held), len(c.Shard.Pairs))
	case len(c.Sources) > 0:
		var parts []string
		for _, s := range c.Sources {
			parts = append(parts, fmt.Sprintf("%s (%s, %s, %.0f s)", s.Shard, s.Dir, words.Plural(s.Runs, "run"), s.DurationS))
		}
		return fmt.Sprintf("Merged from %s: %s; \"took\" is the slowest shard's time.", words.Plural(len(c.Sources), "shard"), strings.Join(parts, ", "))
	}
	return ""
}

func shortFingerprint(f string) string {
	f = strings.TrimPrefix(f, "sha256:")
	if len(f) > 12 {
		f = f[:12]
	}
	return f
}
