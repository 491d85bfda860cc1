package main

import "github.com/fencecheck/fencecheck/internal/buildinfo"

// version says which build of check this is (buildinfo.Version).
func version() string { return buildinfo.Version() }
