package main

import (
	"strings"
	"sync"
	"testing"
)

// Tests side by side (--parallel) print whole lines, each under its test's
// prefix, however their output was cut into writes; Flush ends a line
// left open.
func TestPrefixWriterWritesWholeLines(t *testing.T) {
	var mu sync.Mutex
	var out strings.Builder
	a := &prefixWriter{mu: &mu, w: &out, prefix: "[test 1] "}
	b := &prefixWriter{mu: &mu, w: &out, prefix: "[test 2] "}
	a.Write([]byte("run start"))
	b.Write([]byte("run st"))
	a.Write([]byte("ed\r\nverdict: "))
	b.Write([]byte("arted\n"))
	a.Write([]byte("valid"))
	a.Flush()
	b.Flush()
	want := "[test 1] run started\n[test 2] run started\n[test 1] verdict: valid\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
