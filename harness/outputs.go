package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/runstore"
)

// Outputs are what a run reports about itself beyond its store, given by
// whoever runs the test: they are not what the user asked the test to be,
// so they are not in Config. The runs of one Test (--test-count, a
// comparison's cell) differ in their seed, their store and these.
type Outputs struct {
	// Command is the command line that reruns the test, for the report,
	// quoted as a POSIX shell reads it; CommandArgv is the same as a list
	// of arguments.
	Command     string
	CommandArgv []string
	// JUnit, when set, is where a JUnit XML report goes (one test case
	// per key), for CI systems.
	JUnit string
}

// WithOutputs is the test reporting to o: its JUnit file is checked, as
// the store is, before anything is created.
func (t *Test) WithOutputs(o Outputs) (*Test, error) {
	if err := CheckJUnitPath(o.JUnit); err != nil {
		return nil, err
	}
	again := *t
	again.outputs = o
	again.outputs.CommandArgv = slices.Clone(o.CommandArgv)
	return &again, nil
}

// checkOutputs checks, before anything is created, that every place the
// run will write in its store can take what it writes: the store
// (--store) is a directory or can be made one, and the test's directory
// in it (--name) is not a file (WithOutputs checks --junit). Each is bad
// input (a *usage.Error naming the flag), found at once rather than after
// a run whose verdict it would then hide.
func checkOutputs(c *Config) error {
	if err := CheckStoreDir(c.Store); err != nil {
		return err
	}
	test := runstore.TestDir(c.Store, c.Name)
	if st, err := os.Stat(test); err == nil && !st.IsDir() {
		return usage.Errorf("name", "%s is a file, but the test's name is a directory in the store (%s): choose another --name, or move the file", test, c.Store)
	}
	return nil
}

// CheckStoreDir checks, before anything is created, that --store names
// a directory this user can write, or one that can be made (as a run's
// and a comparison's store must).
func CheckStoreDir(dir string) error {
	return checkDirPath("store", dir, "a directory for the results, e.g. --store store")
}

// CheckJUnitPath checks that --junit names a file that can be written:
// not a directory, in a directory that exists or can be made, that this
// user may write to. "" (no --junit) passes.
func CheckJUnitPath(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return usage.Errorf("junit", "%s is a directory: give the file to write, e.g. --junit %s", path, filepath.Join(path, "junit.xml"))
		}
		if unix.Access(path, unix.W_OK) != nil {
			return usage.Errorf("junit", "%s cannot be written by this user: give another file, or change its permissions", path)
		}
		return nil
	}
	return checkDirPath("junit", filepath.Dir(path), "a file in a directory this user can write, e.g. --junit junit.xml")
}

// checkDirPath checks that dir is a directory this user can write to, or
// can be made one: its nearest existing ancestor is a writable directory.
func checkDirPath(flag, dir, example string) error {
	p := filepath.Clean(dir)
	for {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			if p == filepath.Clean(dir) {
				return usage.Errorf(flag, "%s is a file, not a directory: give %s", dir, example)
			}
			return usage.Errorf(flag, "%s cannot be made: %s is a file, not a directory; give %s", dir, p, example)
		case err == nil:
			if unix.Access(p, unix.W_OK|unix.X_OK) != nil {
				return usage.Errorf(flag, "%s cannot be written by this user (%s is not writable): give %s", dir, p, example)
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return usage.Errorf(flag, "%s cannot be used: %v; give %s", dir, err, example)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return usage.Errorf(flag, "%s cannot be made: %v", dir, fmt.Errorf("no part of it exists"))
		}
		p = parent
	}
}
