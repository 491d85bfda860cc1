// Package result holds a comparison's result and its files: the matrix
// `check compare` fills (rows, cells, runs), the shard and merge
// bookkeeping, writing compare.json, compare.md and compare.html
// (files.go, compare.html.tmpl) and reading compare.json back. compare
// fills these values; this package neither runs a test nor judges one,
// and writes nothing but the three files of a comparison.
//
// The tables are drawn here and not in reports because compare is their
// one reader and writer: were reports to draw them, reports would import
// compare's result while compare imports reports (for a run's stats), a
// loop between the two folders.
package result

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

// CompareSchema names the version of compare.json (docs/compare.md).
const CompareSchema = "fencecheck/compare/v1"

// Comparison is a matrix of runs, `check compare`'s result: one row per
// backend/recipe/storage/fencing, one column per fault. It is what
// compare.json holds and what compare.md and compare.html show.
type Comparison struct {
	Schema string `json:"schema"`
	// Started is the UTC wall-clock time the comparison began.
	Started string `json:"started"`
	// Preset is the --preset used, if any.
	Preset string `json:"preset,omitempty"`
	// Published is the figure the preset reproduces, as published, with
	// the row it is to be read beside; "" for a preset without one.
	Published string `json:"published,omitempty"`
	// Seed is the first run's seed; run r of every cell uses Seed+r.
	Seed       int64   `json:"seed"`
	Runs       int     `json:"runs"`
	TimeLimitS float64 `json:"time_limit_s"`
	// Clients, Keys, Nodes and LeaseTTLS are what every run shares.
	Clients   int     `json:"clients,omitempty"`
	Keys      int     `json:"keys,omitempty"`
	Nodes     int     `json:"nodes,omitempty"`
	LeaseTTLS float64 `json:"lease_ttl_s,omitempty"`
	// DurationS is the whole comparison's wall time.
	DurationS float64      `json:"duration_s"`
	Faults    []string     `json:"faults"`
	Rows      []CompareRow `json:"rows"`
	// Errors counts the runs that could not be carried out.
	Errors int `json:"errors"`
	// Interrupted: a signal stopped the comparison; cells not reached
	// have no runs.
	Interrupted bool `json:"interrupted,omitempty"`
	// Shard is set in a shard's partial compare.json (check compare
	// --shard); Sources and Missing in a merged one (check compare merge):
	// the shards it was made from and the runs none of them brought back.
	Shard   *CompareShard    `json:"shard,omitempty"`
	Sources []CompareSource  `json:"sources,omitempty"`
	Missing []CompareMissing `json:"missing,omitempty"`
	// Unfinished, in a merged comparison, are the runs a shard called
	// valid whose history does not show that they finished (no end event:
	// docs/history.md), each with why; the merge counts them as unknown.
	Unfinished []string `json:"unfinished,omitempty"`
}

// CompareRow is one backend/recipe/storage/fencing combination.
type CompareRow struct {
	Backend string `json:"backend"`
	// ServerVersion is the server build the row asked for
	// (--server-versions), "" for the matrix's own.
	ServerVersion string `json:"server_version,omitempty"`
	Recipe        string `json:"recipe"`
	// Settings are the row's choice of the backend's own flags, as the
	// tables show it ("safe: --redis-persistence aof-always"), and
	// Options those flags by name; omitted for a row that runs with the
	// matrix's (the power and deployments presets' rows have them).
	Settings string            `json:"settings,omitempty"`
	Options  map[string]string `json:"options,omitempty"`
	Storage  string            `json:"storage"`
	Fencing  string            `json:"fencing"`
	Cluster  string            `json:"cluster"`
	// Cells are in the order of Comparison.Faults.
	Cells []CompareCell `json:"cells"`
}

// CompareCell is one row under one fault: its runs and their summary.
type CompareCell struct {
	Fault string `json:"fault"`
	// NotApplicable says why the cell was not run (e.g. a fault an
	// in-process run cannot inject); the cell is then empty.
	NotApplicable string `json:"not_applicable,omitempty"`
	// Verdicts counts the runs by verdict: valid, invalid, unknown, and
	// error for a run that could not be carried out.
	Verdicts map[string]int `json:"verdicts"`
	// MedianFirstViolationS is the median, over the runs that found a
	// violation, of when the first culprit op completed (seconds into the
	// workload); null when no run found one.
	MedianFirstViolationS *float64 `json:"median_first_violation_s"`
	// AcquiresPerS is ok acquires / time limit, averaged over the runs
	// that recorded any op.
	AcquiresPerS float64 `json:"acquires_per_s"`
	// AcquireOKShare is ok / (ok + fail + info) of every acquire of the
	// cell's runs; null when there was none.
	AcquireOKShare *float64 `json:"acquire_ok_share"`
	// MedianLostShare is the median, over the runs whose lost updates
	// could be counted, of each run's share of acknowledged updates lost
	// (its lower bound: exact when no write's outcome was unknown);
	// LostShareRange is [the smallest lower bound, the largest upper
	// bound] over those runs. Null when no run could be counted.
	MedianLostShare *float64  `json:"median_lost_share"`
	LostShareRange  []float64 `json:"lost_share_range,omitempty"`
	// ExpiredGrants of Grants, summed over the runs that counted them:
	// the lock granted on a lease that had already expired. Omitted when
	// no run counted them.
	ExpiredGrants *int `json:"expired_grants,omitempty"`
	Grants        int  `json:"grants,omitempty"`
	// Exposures are the runs' exposures pooled (summed) over the runs
	// that counted them, ExposureRuns of them; AdmittedBound is what they
	// say of the chance that an exposure is admitted. Omitted when no run
	// counted them.
	Exposures     *models.ExposureCounts `json:"exposures,omitempty"`
	ExposureRuns  int                    `json:"exposure_runs,omitempty"`
	AdmittedBound *AdmittedBound         `json:"admitted_bound,omitempty"`
	Runs          []CompareRun           `json:"runs"`
	// Missing counts the cell's runs a merged comparison lacks (a shard
	// that did not come back); the verdicts are of the runs it has.
	Missing int `json:"missing,omitempty"`
}

// CompareRun is one run of a cell.
type CompareRun struct {
	// Dir is the run's directory relative to the comparison's (slashes);
	// empty when the run did not get as far as making one.
	Dir  string `json:"dir,omitempty"`
	Seed int64  `json:"seed"`
	// Verdict is valid, invalid, unknown or error.
	Verdict string `json:"verdict"`
	Error   string `json:"error,omitempty"`
	// FirstViolationS is when the first culprit op completed, seconds into
	// the workload; null when the run found no violation.
	FirstViolationS *float64 `json:"first_violation_s"`
	AcquireOK       int      `json:"acquire_ok"`
	AcquireFail     int      `json:"acquire_fail"`
	AcquireInfo     int      `json:"acquire_info"`
	TimeLimitS      float64  `json:"time_limit_s"`
	// DurationS is the run's wall time, setup and check included.
	DurationS float64 `json:"duration_s"`
	// LostShareMin and LostShareMax bound the share of acknowledged
	// updates the run lost (results.json's damage); null when they could
	// not be counted.
	LostShareMin *float64 `json:"lost_share_min"`
	LostShareMax *float64 `json:"lost_share_max"`
	// Servers is what the run's servers said they are (results.json's
	// servers.summary, e.g. "etcd 3.6.16"); omitted when the run did not
	// ask them.
	Servers string `json:"servers,omitempty"`
	// ExpiredGrants of Grants: the lock granted on a lease that had
	// already expired (results.json's expired_grants); omitted when the
	// backend does not count them.
	ExpiredGrants *int `json:"expired_grants,omitempty"`
	Grants        int  `json:"grants,omitempty"`
	// Exposures are results.json's exposure counts; omitted when the run
	// did not count them (it ended before its check).
	Exposures *models.ExposureCounts `json:"exposures,omitempty"`
}

// AdmittedBound is the pooled exposures' verdict on the chance that an
// exposure is admitted: Decided exposures had a known outcome, Admitted
// of them were admitted; Rate is their share, and [Low, High] its exact
// (Clopper–Pearson) 95 % bounds — with none admitted, High is the
// one-sided upper bound and Low is 0. Text says it in words.
type AdmittedBound struct {
	Decided  int     `json:"decided"`
	Admitted int     `json:"admitted"`
	Rate     float64 `json:"rate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	Text     string  `json:"text"`
}

// PoolExposures sums the exposures of the cell's runs that counted them
// and bounds the chance of admission: a cell's figures are those of its
// runs taken together, so a merged cell gives the figures one machine
// would have.
func (c *CompareCell) PoolExposures() {
	c.Exposures, c.ExposureRuns, c.AdmittedBound = nil, 0, nil
	var pooled models.ExposureCounts
	for _, r := range c.Runs {
		if r.Exposures != nil {
			pooled.Add(*r.Exposures)
			c.ExposureRuns++
		}
	}
	if c.ExposureRuns == 0 {
		return
	}
	c.Exposures = &pooled
	if rate, lo, hi, ok := pooled.Bound(); ok {
		c.AdmittedBound = &AdmittedBound{Decided: pooled.Decided(), Admitted: pooled.Admitted, Rate: rate, Low: lo, High: hi, Text: pooled.BoundText()}
	}
}

// ExposureText is the cell's pooled exposures, as the tables show them:
// "31 exposures, 31 refused · 0 of 31 admitted: at most 9.2 % per
// exposure (95 %)", or "not exercised: 0 exposures" for a cell whose runs
// put safety at stake nowhere; "" when no run counted them.
func (c *CompareCell) ExposureText() string {
	if c.Exposures == nil || c.NotApplicable != "" {
		return ""
	}
	if !c.Exposures.Exercised() {
		return "not exercised: 0 exposures"
	}
	s := c.Exposures.Short()
	if c.AdmittedBound != nil {
		s += " · " + c.AdmittedBound.Text
	}
	return s
}

// Unexercised reports a cell whose every run was valid and whose runs,
// together, put safety at stake nowhere.
func (c *CompareCell) Unexercised() bool {
	n := len(c.Runs)
	return n > 0 && c.Exposures != nil && !c.Exposures.Exercised() && c.Verdicts["valid"] == n && c.Missing == 0
}

// BackendLabel is the backend as the tables show it: with the server
// build the row asked for, when it names one.
func (r *CompareRow) BackendLabel() string {
	if r.ServerVersion != "" {
		return r.Backend + " " + r.ServerVersion
	}
	return r.Backend
}

// RecipeWithSettings is the recipe with the row's settings, when it has
// some, for the lines that name a row: "setnx-incr [safe: --redis-persistence
// aof-always]".
func (r *CompareRow) RecipeWithSettings() string {
	if r.Settings != "" {
		return r.Recipe + " [" + r.Settings + "]"
	}
	return r.Recipe
}

// HasSettings says whether any row of c has settings of its own: the
// tables then show them in a column.
func (c *Comparison) HasSettings() bool {
	return slices.ContainsFunc(c.Rows, func(r CompareRow) bool { return r.Settings != "" })
}

// ServersText is what the row's servers said they are, over every run
// of every cell: each distinct answer once, in the order first seen ("etcd
// 3.6.16"); "" when no run asked.
func (r *CompareRow) ServersText() string {
	var seen []string
	for _, c := range r.Cells {
		for _, run := range c.Runs {
			if run.Servers != "" && !slices.Contains(seen, run.Servers) {
				seen = append(seen, run.Servers)
			}
		}
	}
	return strings.Join(seen, " / ")
}

// Error is the verdict word of a run that could not be carried out (exit
// 255): a cell's verdicts count it, and `check --test-count` tallies it
// under the same word.
const Error = "error"

// The verdict words of a cell, in the order a cell lists them.
var compareVerdicts = []string{"invalid", "valid", "unknown", Error}

// VerdictText is the cell's verdicts, e.g. "invalid 5/5" or
// "invalid 3/5, valid 2/5"; "n/a" for a cell not run, "not run" for one a
// signal kept from running.
func (c *CompareCell) VerdictText() string {
	if c.NotApplicable != "" {
		return "n/a"
	}
	n := len(c.Runs)
	var parts []string
	if n == 0 && c.Missing == 0 {
		return "not run"
	}
	for _, v := range compareVerdicts {
		if k := c.Verdicts[v]; k > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", v, k, n+c.Missing))
		}
	}
	if c.Missing > 0 {
		parts = append(parts, fmt.Sprintf("missing %d/%d", c.Missing, n+c.Missing))
	}
	return strings.Join(parts, ", ")
}

// StatsText is the cell's numbers: median time to first violation,
// acquisitions per second and the share of acquisitions that succeeded.
func (c *CompareCell) StatsText() string {
	if c.NotApplicable != "" || len(c.Runs) == 0 {
		return ""
	}
	first := "first —"
	if c.MedianFirstViolationS != nil {
		first = fmt.Sprintf("first %.1f s", *c.MedianFirstViolationS)
	}
	share := "— ok"
	if c.AcquireOKShare != nil {
		share = fmt.Sprintf("%.0f%% ok", 100**c.AcquireOKShare)
	}
	if lost := c.LostText(); lost != "" {
		first += " · " + lost
	}
	text := fmt.Sprintf("%s · %.1f acq/s · %s", first, c.AcquiresPerS, share)
	if c.ExpiredGrants != nil {
		text += fmt.Sprintf(" · %d of %d grants on an expired lease", *c.ExpiredGrants, c.Grants)
	}
	return text
}

// LostText is the cell's lost-update share, e.g. "lost 2.1%" or, over
// several runs or with writes of unknown outcome, "lost 2.1% (0.4–5%)";
// "" when no run's lost updates could be counted.
func (c *CompareCell) LostText() string {
	if c.MedianLostShare == nil {
		return ""
	}
	s := "lost " + models.ShareText(*c.MedianLostShare, *c.MedianLostShare)
	if len(c.LostShareRange) == 2 && c.LostShareRange[0] != c.LostShareRange[1] {
		s += " (" + models.ShareText(c.LostShareRange[0], c.LostShareRange[1]) + ")"
	}
	return s
}

// Class is the cell's colour: valid or invalid when every run agrees
// (unexercised when every run was valid but none put safety at stake),
// error when a run failed, unknown otherwise (also when runs of a merged
// comparison are missing).
func (c *CompareCell) Class() string {
	n := len(c.Runs)
	switch {
	case c.NotApplicable != "" || n == 0:
		return "na"
	case c.Verdicts[Error] > 0:
		return "error"
	case c.Missing > 0:
		return "unknown" // not every run came back
	case c.Verdicts["invalid"] == n:
		return "invalid"
	case c.Unexercised():
		return "unexercised"
	case c.Verdicts["valid"] == n:
		return "valid"
	}
	return "unknown"
}

// Shared says what every run of the comparison had in common: "5 clients,
// 1 key, 3 nodes, lease 2 s".
func (c *Comparison) Shared() string {
	return fmt.Sprintf("%d %s, %d %s, %d %s, lease %s", c.Clients, plural(c.Clients, "client", "clients"),
		c.Keys, plural(c.Keys, "key", "keys"), c.Nodes, plural(c.Nodes, "node", "nodes"), Seconds(c.LeaseTTLS))
}

// Seconds prints a duration in seconds as the comparison's pages do:
// "20 s", "0.5 s".
func Seconds(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".") + " s"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
