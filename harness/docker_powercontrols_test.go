package harness

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/backends/postgres"
	"github.com/fencecheck/fencecheck/models"
)

// The negative controls of the power faults: services run with their
// durability turned down, each under the cut its known answer needs
// (docs/power-loss.md, "Known answers"). Each must not pass: a lost grant
// contradicted (invalid), or no grant after the cut to show it was not
// lost (unknown). A VALID here would mean the layer lost less than a
// power cut. One short run each; the answers the service documents.

// notValidUnderPower runs cfg and wants a verdict other than valid, with a
// cut made that dropped something.
func notValidUnderPower(t *testing.T, cfg Config) *RunResult {
	t.Helper()
	start := time.Now()
	// Its servers may never answer again after a cut (etcd without
	// fsync), or never restart (PostgreSQL without fsync, whose heal then
	// fails the run): what they said is logged, not required.
	out, err := runDockerMayFail(t, cfg)
	if err != nil {
		t.Logf("the run could not be carried out to its end: %v", err)
	}
	if out.Report == nil {
		t.Fatalf("no report (store %s)", out.Dir)
	}
	if sv := out.Report.Servers; sv != nil {
		t.Logf("servers: %s", sv.Summary)
	}
	p := powerCuts(t, out)
	t.Logf("%s in %s: %s", out.Result.Verdict, time.Since(start).Round(time.Second), out.Result.Explanation)
	if out.Result.Verdict == models.Valid {
		t.Fatalf("valid with durability off (store %s)", out.Dir)
	}
	if p.DroppedBytes == 0 {
		t.Errorf("no cut dropped a byte: %s (store %s)", p.DropText(), out.Dir)
	}
	return out
}

// etcd without fsync loses its WAL at a coordinated cut: its members
// come back with no voters and never serve again (no grant after the
// cut), or, were one elected, with revisions reused.
func TestDockerEtcdUnsafeNoFsyncUnderPowerLossAllIsNotValid(t *testing.T) {
	cfg := powerConfig(t, "etcd", "power-loss-all")
	cfg.Options = map[string]string{etcd.UnsafeNoFsyncFlag.Name: "true"}
	notValidUnderPower(t, cfg)
}

// PostgreSQL with synchronous_commit off acknowledges a commit before its
// WAL is flushed (its documentation: "a crash may lose the most recent
// transactions"): the token sequence rolls back and a token is granted
// again. The cut is aimed at a grant's acknowledgement, before the next
// WAL sync (--power-at grant): a cut at a random moment loses only what
// the WAL writer had not flushed in its last 200 ms, and CI's run of
// 2026-12-07 18:05 cut when nothing was, and came out VALID.
func TestDockerPostgresSynchronousCommitOffUnderPowerLossIsNotValid(t *testing.T) {
	cfg := powerConfig(t, "postgres", "power-loss")
	cfg.Options = map[string]string{postgres.SynchronousCommitFlag.Name: "off", "power-at": "grant"}
	notValidUnderPower(t, cfg)
}

// PostgreSQL with fsync off flushes nothing ("an unrecoverable data
// corruption" after a crash, its documentation says). Measured: the
// server never started again after the first cut ("lock file
// "postmaster.pid" is empty": fsync=off leaves even its lock file
// unsynced), its heal timed out, and the run is unknown, not carried out
// to its end.
func TestDockerPostgresFsyncOffUnderPowerLossIsNotValid(t *testing.T) {
	cfg := powerConfig(t, "postgres", "power-loss")
	cfg.Options = map[string]string{postgres.FsyncFlag.Name: "off"}
	notValidUnderPower(t, cfg)
}
