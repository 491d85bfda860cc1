package dockertest

import (
	"strings"
	"time"
)

// Budgets is every Docker test of the repository, by name, with its time
// budget: the most it may take, counted from its first call to Engine to
// the end of its cleanups, less the time it spent on what is not its own
// (OutsideBudget: the node image a process's first test builds). A test
// past its budget fails while it runs, and is ended soon after
// (budget.go). A Docker test missing here fails under CI=true, and
// TestEveryDockerTestHasABudget fails everywhere.
//
// How the budgets follow from measured times (docs/benchmarks.md, "CI's
// time"). On a quiet machine of CI's kind, the ten slowest tests took
// 57 s to 1 min 35 s each (TestDockerNatsKnownAnswers the slowest), so
// every other test took under 57 s; harness's 36 tests of the first
// stream took 23 min, 38 s each on average. Under a load of 20–30 (several
// developers' clusters beside CI's) the slowest took 3–4 min, about 2.5
// times their quiet time. Each test's own time was not kept until now
// (testsummary's -times file keeps it), so the budgets go by what a test
// does:
//
//   - oneRun, 4 minutes: a test that makes one cluster (or a few
//     containers) and runs at most one short workload on it. Under 57 s
//     quiet, about 2.5 min under heavy load: 4 leaves room for that, and
//     stops a hang within minutes instead of at the package's 80-minute
//     timeout.
//   - severalRuns, 8 minutes: a test that makes several clusters or runs
//     several workloads, builds images, or waits out a bound by design:
//     the ten slowest are among these (up to 1 min 35 s quiet, 3–4 min
//     under heavy load; 8 is twice that).
//
// A test that the times file shows near its budget (the summary lists
// every test over 80 % of it) is made leaner first (a shorter workload, a
// shared cluster); a budget is raised only with the measured reason beside
// it here.
var Budgets = map[string]time.Duration{
	// backends, backends/nats
	"TestDockerServerThatNeverStartsFailsWithItsLog": oneRun,
	"TestDockerNatsKnownAnswers":                     severalRuns, // one warm cluster, three runs, and one on Debian's nats-server: 54 s alone

	// cmd/check
	"TestDockerRemoteEngineOverSSH": severalRuns, // a run through sshd, a holder frozen, then the remote engine's teardown

	// compare
	"TestDockerKnownAnswers":      severalRuns,
	"TestDockerParallelInterrupt": severalRuns, // two runs of 90 s time limit, interrupted

	// compose/engine
	"TestDockerUpMissingImage":            oneRun,
	"TestDockerCluster":                   severalRuns, // eight subtests on clusters of their own
	"TestDockerAgentImageCarriesPrograms": severalRuns, // the core image and an agent image built
	"TestDockerTCPEngineWithTLS":          oneRun,

	// compose/sshnodes
	"TestDockerSSHHosts":    oneRun, // three sshd containers: exec, streams, copies, pauses, a partition, Down: 12-16 s alone
	"TestDockerSSHWatchdog": oneRun, // three sshd containers abandoned mid-fault, healed by their watchdogs (8 s): 12-16 s alone

	// compose/images
	"TestDockerImage":                  severalRuns, // the node image, made here when CI has not made it
	"TestDockerImageRebuild":           severalRuns, // a rebuild of the node image from its cached layers
	"TestDockerCoreImage":              severalRuns,
	"TestDockerImageBuildInterrupted":  oneRun,
	"TestDockerImageBuildFailureQuiet": oneRun,

	// harness
	"TestDockerAgreementEtcd":                                                    oneRun, // 3 etcd members under kill, then HashKV on each: 28 s alone
	"TestDockerNatsPowerLossAllDefaultSyncIsInvalid":                             oneRun, // 12 s of workload, the bucket lost at the cut: 37 s alone
	"TestDockerCustomClientOutlivesAWholeClusterOutage":                          oneRun, // redislock under power-loss-all, its replacements retried through the outage: 31 s alone
	"TestDockerEtcdUnsafeNoFsyncUnderPowerLossAllIsNotValid":                     oneRun, // 42-49 s alone
	"TestDockerPostgresSynchronousCommitOffUnderPowerLossIsNotValid":             oneRun, // 28 s alone
	"TestDockerPostgresFsyncOffUnderPowerLossIsNotValid":                         oneRun, // 88-90 s alone: the heal waits out a server that never restarts (its lock file was never synced)
	"TestDockerAgentOfAnotherArchitectureIsRefused":                              oneRun,
	"TestDockerClientIgnoringStop":                                               oneRun,
	"TestDockerClientSQLConditionalUpdate":                                       oneRun,
	"TestDockerClientSQLSelectThenUpdate":                                        oneRun,
	"TestDockerClientSQLRowCountIgnored":                                         oneRun,
	"TestDockerClockFaultsKnownAnswers":                                          severalRuns,
	"TestDockerDaemonGoneMidRun":                                                 severalRuns, // the engine's socket cut mid-run, then the run's bounded end
	"TestDockerUnansweredUnpauseEndsTheRunInBoundedTime":                         severalRuns, // waits out the unpause's bound by design
	"TestDockerEtcd14370RaftBeforeSavePanic":                                     severalRuns, // two runs on one member, 3.5.4 then 3.5.5, each with failpoint crashes: 48 s alone
	"TestDockerEtcdCleanRunIsValid":                                              oneRun,
	"TestDockerEtcdFencedLeaseUnderHolderPauseIsValid":                           oneRun,
	"TestDockerEtcdExactReleaseOnOneMember":                                      oneRun, // etcd 3.5.4 on one member, one short run: 16 s alone
	"TestDockerEtcdFencedUnderLeaderKillAndRingIsValidAndRecovers":               oneRun,
	"TestDockerEtcdFromShellLessImage":                                           severalRuns, // three runs
	"TestDockerEtcdByEndpoints":                                                  severalRuns, // a hand-started etcd, three runs (one refused)
	"TestDockerEtcdOnSSHHosts":                                                   severalRuns, // seven sshd containers, three etcd runs installed on them (pause-holder twice, kill and a partition): measured below
	"TestDockerEtcdGuardedTransactionUnderHolderPauseIsValid":                    oneRun,
	"TestDockerEtcdLockRPCFencedUnderHolderPauseIsValid":                         oneRun,
	"TestDockerEtcdLockRPCFencedUnderPartitionsAndKillsIsValid":                  oneRun,
	"TestDockerEtcdLockRPCUnfencedUnderHolderPauseIsInvalid":                     oneRun,
	"TestDockerEtcdOnDemandVersionsRunAndSayWhatTheyAre":                         severalRuns, // etcd 3.5 and 3.7, one cluster each
	"TestDockerEtcdTrustingClientUnderPauseAllLosesUpdatesUnlessFenced":          severalRuns, // two runs
	"TestDockerEtcdUnderPowerLossAllIsValid":                                     oneRun,
	"TestDockerEtcdUnfencedLeaseUnderHolderPauseIsInvalid":                       oneRun,
	"TestDockerExampleClientGo":                                                  severalRuns, // a client's image, then client-test's runs
	"TestDockerExampleCurator":                                                   severalRuns,
	"TestDockerExampleKazoo":                                                     severalRuns,
	"TestDockerExampleRedisPy":                                                   severalRuns,
	"TestDockerFullDiskIsReported":                                               oneRun,
	"TestDockerGoClientUnderHolderPause":                                         oneRun,
	"TestDockerInterruptAtEveryPhase":                                            severalRuns, // one run interrupted in each phase
	"TestDockerInterruptHealsAndTearsDown":                                       oneRun,
	"TestDockerKubernetesFencedLeaderUnderHolderPauseIsValid":                    oneRun,
	"TestDockerKubernetesThreeAPIServersUnfencedLeaderUnderHolderPauseIsInvalid": severalRuns, // three API servers to start
	"TestDockerKubernetesUnfencedLeaderUnderHolderPauseIsInvalid":                oneRun,
	"TestDockerMemoryBackendReproducesTheSeed":                                   severalRuns, // two runs
	"TestDockerMemoryReadMix":                                                    oneRun,
	"TestDockerPostgresAdvisoryUnderClientPartition":                             oneRun,
	"TestDockerPostgresAdvisoryUnderHolderPause":                                 oneRun,
	"TestDockerPostgresCleanRunsAreValid":                                        oneRun,
	"TestDockerPostgresFencedLeaseUnderHolderPauseIsValid":                       oneRun,
	"TestDockerPostgresStorageUnderHolderPause":                                  severalRuns, // two runs
	"TestDockerPostgresUnfencedLeaseUnderHolderPauseIsInvalid":                   oneRun,
	"TestDockerRedisCleanRunsAreValid":                                           oneRun,
	"TestDockerRedisFromShellLessImage":                                          severalRuns, // two runs
	"TestDockerRedisIncrTokenUnderHolderPauseIsValid":                            oneRun,
	"TestDockerRedisIncrTokenUnderKill":                                          oneRun,
	"TestDockerRedisIncrTokenUnderPowerLossAOFAlwaysIsValid":                     oneRun,
	"TestDockerRedisIncrTokenUnderPowerLossAOFEverysecIsInvalid":                 oneRun,
	"TestDockerRedisSentinelKnownAnswers":                                        severalRuns,
	"TestDockerRedisTokenlessLockUnderHolderPauseIsInvalid":                      oneRun,
	"TestDockerWarmClusterAfterHoldersKilledHolding":                             severalRuns, // runs on one warm cluster
	"TestDockerWarmClusterRunsAsANewOne":                                         severalRuns,
	"TestDockerZookeeperCleanRunIsValid":                                         oneRun,
	"TestDockerZookeeperFencedLockUnderHolderPauseIsValid":                       oneRun,
	"TestDockerZookeeperFencedLockUnderLeaderIsolationIsValid":                   oneRun,
	"TestDockerZookeeperFencedLockUnderLeaderKillIsValid":                        oneRun,
	"TestDockerZookeeperUnfencedLockUnderHolderPauseIsInvalid":                   oneRun,

	// nemesis
	"TestDockerEtcdPrimaryIsTheLeader":       oneRun,
	"TestDockerKill":                         oneRun,
	"TestDockerLatency":                      oneRun,
	"TestDockerPartition":                    oneRun,
	"TestDockerPause":                        oneRun,
	"TestDockerPowerCutAimedAndAtOneInstant": oneRun, // three nodes frozen before their log's third sync, then a silent cut at one instant: 20 s alone
	"TestDockerPowerLayer":                   oneRun, // 33 s alone
	"TestDockerScheduleInterrupt":            oneRun,
}

// The two budgets a test gets by what it does (see Budgets).
const (
	oneRun      = 4 * time.Minute
	severalRuns = 8 * time.Minute
)

// AllowedSkips are the reasons a test may skip under CI=true, where every
// other skip fails the run (scripts/testsummary): each names something a
// CI machine can never have, matched as a substring of the skip's
// message. Empty: CI's machine has everything every test needs, and
// .ci/run installs what a fresh one lacks.
var AllowedSkips = []string{}

// SkipAllowed reports whether a skip whose message is reason may pass
// under CI=true.
func SkipAllowed(reason string) bool {
	for _, a := range AllowedSkips {
		if strings.Contains(reason, a) {
			return true
		}
	}
	return false
}

// BudgetOf is the budget of the test named name (a subtest has its top
// test's), and whether the table has it.
func BudgetOf(name string) (time.Duration, bool) {
	top, _, _ := strings.Cut(name, "/")
	b, ok := Budgets[top]
	return b, ok
}
