package shellquote

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestQuoteKeepsPlainWords(t *testing.T) {
	for in, want := range map[string]string{
		"--time-limit": "--time-limit", "10s": "10s", "a,b": "a,b", "store/x.y": "store/x.y",
		"":      "''",
		"a b":   "'a b'",
		"it's":  `'it'\''s'`,
		"$HOME": "'$HOME'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestJoinRoundTripsThroughSh has a real POSIX shell read the quoted line
// back: every argument must come out as it went in.
func TestJoinRoundTripsThroughSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh on this machine: %v", err)
	}
	args := []string{"check", "--name", "", "--store", "my runs/$HOME", "it's", `"quoted"`, "back\\slash",
		"a;b", "x|y", "`id`", "*", "~", "#c", "tab\there", "new\nline", "ünï", "!", "{a,b}", "[x]", "&", "=v", "--flag=true"}
	// printf prints each argument NUL-terminated, so the test sees exactly
	// what the shell passed.
	line := "printf '%s\\0' " + Join(args[1:])
	out, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, args[1:]) {
		t.Errorf("sh read back\n%q\nwant\n%q\n(line: %s)", got, args[1:], line)
	}
}
