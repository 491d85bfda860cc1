package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/fencecheck/fencecheck", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-02T13:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := Describe(info), "devel (revision 0123456789ab of 2026-12-02T13:00:00Z with local changes, go1.26.1)"; got != want {
		t.Errorf("Describe:\n got %q\nwant %q", got, want)
	}
	if got, want := ShortOf(info), "devel 0123456789ab+changes"; got != want {
		t.Errorf("ShortOf: got %q, want %q", got, want)
	}
	tagged := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}
	if got := Describe(tagged); got != "v1.2.0" {
		t.Errorf("Describe a tagged module: %q", got)
	}
	if got := ShortOf(tagged); got != "v1.2.0" {
		t.Errorf("ShortOf a tagged module: %q", got)
	}
}
