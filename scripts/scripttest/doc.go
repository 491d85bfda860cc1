// Package scripttest tests the shell scripts CI runs, scripts/test and
// .ci/run, on the paths that must make a run red before any test runs: a
// check given nothing to check, a git that cannot list the files, a
// machine that lacks what CI needs. Each test runs the real script in a
// scratch checkout and reads its last lines, as a person reading CI's
// output would.
//
// It holds no code of its own: the scripts are the code under test.
package scripttest
