package nemesis

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/usage"
)

// --failpoint takes NAME=ACTION with the actions gofail's runtime parses,
// and says what is wrong with anything else.
func TestParseFailpoint(t *testing.T) {
	for _, v := range []string{"raftBeforeSave=panic", "raftBeforeSave=1*panic", "defragBeforeCopy=sleep(2000)",
		`defragBeforeCopy=sleep("1.5s")`, "raftBeforeSave=50%panic", "raftBeforeSave=2*sleep(100)->panic", "raftBeforeSave=off",
		`defragdbFail=return("injected")`, "raftBeforeSave=print", "raftBeforeSave=10.5%1*panic", "raftBeforeSave=1*50%panic", `raftBeforeSave=panic("boom")`} {
		if _, _, err := ParseFailpoint(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		if err := FailpointFlag.Check(v); err != nil {
			t.Errorf("--failpoint %s: %v", v, err)
		}
	}
	name, action, err := ParseFailpoint("raftBeforeSave=1*panic")
	if err != nil || name != "raftBeforeSave" || action != "1*panic" {
		t.Errorf("raftBeforeSave=1*panic: %q %q %v", name, action, err)
	}
	for v, why := range map[string]string{
		"raftBeforeSave":              "is not NAME=ACTION",
		"raftBeforeSave=":             "no action",
		"=panic":                      "is not a failpoint name",
		"raft-before=panic":           "is not a failpoint name",
		"raftBeforeSave=explode":      `unknown task "explode"`,
		"raftBeforeSave=sleep":        "sleep needs how long",
		"raftBeforeSave=sleep(x)":     "is not a gofail term",
		`raftBeforeSave=sleep("1y")`:  "is not a duration",
		"raftBeforeSave=off(1)":       "off takes no argument",
		"raftBeforeSave=panic->":      "is not a gofail term",
		"raftBeforeSave=*panic":       "is not a gofail term",
		"raftBeforeSave=panic;reboot": "is not a gofail term",
	} {
		_, _, err := ParseFailpoint(v)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want it to say %q", v, err, why)
		}
		if FailpointFlag.Check(v) == nil {
			t.Errorf("--failpoint %s passed its check", v)
		}
	}
	if FailpointFlag.Check(FailpointList) != nil || FailpointFlag.Check("") != nil {
		t.Error("--failpoint list (or none) refused")
	}
}

// The fault is refused where the servers have no failpoints, with the
// backend's reason; a name the release lacks, a missing --failpoint, list
// under the fault and a power-loss crash without a data directory are
// refused naming their flag.
func TestCheckFailpoint(t *testing.T) {
	base := func(opts map[string]string) Settings {
		return Settings{Backend: "etcd", Docker: true, Servers: 3, DataDir: "/var/lib/fencecheck/etcd",
			Failpoints: []string{"raftBeforeSave", "defragBeforeCopy"}, FailpointPort: 22381, Options: opts}
	}
	noBuild := base(map[string]string{"failpoint": "raftBeforeSave=panic"})
	noBuild.Failpoints, noBuild.NoFailpoints = nil, "etcd 3.4 has no failpoint build"
	for _, tc := range []struct {
		s    Settings
		flag string // the flag the error names; "" for an *Unavailable
		why  string // "" when it passes
	}{
		{base(map[string]string{"failpoint": "raftBeforeSave=panic"}), "", ""},
		{base(map[string]string{"failpoint": "defragBeforeCopy=sleep(100)", "failpoint-target": "all", "failpoint-when": "grant", "failpoint-crash": "power-loss"}), "", ""},
		{noBuild, "", "etcd 3.4 has no failpoint build"},
		{Settings{Backend: "redis", Docker: true, Servers: 1, Options: map[string]string{"failpoint": "raftBeforeSave=panic"}}, "", "backend redis's servers have no failpoints"},
		{base(nil), "failpoint", "needs --failpoint NAME=ACTION"},
		{base(map[string]string{"failpoint": "list"}), "failpoint", "list prints the failpoints"},
		{base(map[string]string{"failpoint": "raftAfterNothing=panic"}), "failpoint", `no failpoint "raftAfterNothing" (accepted: raftBeforeSave, defragBeforeCopy)`},
		{func() Settings {
			s := base(map[string]string{"failpoint": "raftBeforeSave=panic", "failpoint-crash": "power-loss"})
			s.DataDir = ""
			return s
		}(), "failpoint-crash", "keep nothing on a disk"},
	} {
		err := Check("failpoint", tc.s)
		switch {
		case tc.why == "":
			if err != nil {
				t.Errorf("%+v: %v", tc.s.Options, err)
			}
			continue
		case err == nil || !strings.Contains(err.Error(), tc.why):
			t.Errorf("%+v: %v, want it to say %q", tc.s.Options, err, tc.why)
			continue
		}
		var ue *usage.Error
		var un *Unavailable
		if tc.flag == "" && !errors.As(err, &un) {
			t.Errorf("%+v: %T, want an *Unavailable", tc.s.Options, err)
		}
		if tc.flag != "" && (!errors.As(err, &ue) || ue.Flag != tc.flag) {
			t.Errorf("%+v: %#v, want a usage error naming --%s", tc.s.Options, err, tc.flag)
		}
	}
	k, ok := Lookup("failpoint")
	if !ok || !k.Needs.Failpoints || !(Kinds{k}).NeedsFailpoints() || (Kinds{}).NeedsFailpoints() {
		t.Error("the failpoint fault does not say it needs the failpoint build")
	}
	if owners := FlagOwners("failpoint-target"); len(owners) != 1 || owners[0] != "failpoint" {
		t.Errorf("--failpoint-target owned by %v", owners)
	}
}

func TestParseHTTPAnswer(t *testing.T) {
	code, body, err := parseHTTPAnswer("HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\nfailed to GET: failpoint: failpoint does not exist\n")
	if err != nil || code != 404 || !strings.Contains(body, "does not exist") {
		t.Errorf("%d %q %v", code, body, err)
	}
	if code, _, err := parseHTTPAnswer("HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n"); err != nil || code != 204 {
		t.Errorf("204: %d %v", code, err)
	}
	for _, a := range []string{"", "garbage", "HTTP/1.0 abc\r\n\r\n"} {
		if _, _, err := parseHTTPAnswer(a); err == nil {
			t.Errorf("%q read as an answer", a)
		}
	}
}

// --power-layer adds no second layer where the failpoint fault lays one.
func TestLaysPowerLayer(t *testing.T) {
	crash := map[string]string{"failpoint-crash": "power-loss"}
	for _, tc := range []struct {
		names []string
		opts  map[string]string
		want  bool
	}{
		{[]string{"power-loss"}, nil, true},
		{[]string{"failpoint"}, crash, true},
		{[]string{"failpoint"}, map[string]string{"failpoint-crash": "restart"}, false},
		{[]string{"failpoint"}, nil, false},
		{[]string{"kill"}, crash, false},
	} {
		if got := LaysPowerLayer(tc.names, tc.opts); got != tc.want {
			t.Errorf("%v %v: %v, want %v", tc.names, tc.opts, got, tc.want)
		}
	}
}
