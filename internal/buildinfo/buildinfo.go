// Package buildinfo says which build of fencecheck is running, from what
// the Go toolchain recorded in the binary: `check --version` prints it, and
// the memory backend's lock service answers it when asked what it is. It
// only reads the running binary's build information.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version describes this build: the module's version ("devel" when it has
// none, as in a build from a checkout without a tag), the VCS revision and
// whether the tree had local changes, and the Go version.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return Describe(info)
}

// Short is the useful part of Version: the module version and, when
// recorded, the revision ("devel 0123456789ab", "v1.2.0").
func Short() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return ShortOf(info)
}

// Describe is Version for the given build information.
func Describe(info *debug.BuildInfo) string {
	v, rev, at, modified := fields(info)
	var extra []string
	if rev != "" {
		r := "revision " + rev
		if at != "" {
			r += " of " + at
		}
		if modified {
			r += " with local changes"
		}
		extra = append(extra, r)
	}
	if info.GoVersion != "" {
		extra = append(extra, info.GoVersion)
	}
	if len(extra) == 0 {
		return v
	}
	return v + " (" + strings.Join(extra, ", ") + ")"
}

// ShortOf is Short for the given build information.
func ShortOf(info *debug.BuildInfo) string {
	v, rev, _, modified := fields(info)
	if rev == "" {
		return v
	}
	if modified {
		rev += "+changes"
	}
	return v + " " + rev
}

func fields(info *debug.BuildInfo) (v, rev, at string, modified bool) {
	v = info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return v, rev, at, modified
}
