package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/runstore"
)

func TestServersSummary(t *testing.T) {
	n := func(node, version string) ServerNode {
		return ServerNode{Node: node, Version: version, Answer: version}
	}
	unknown := func(node string) ServerNode {
		return ServerNode{Node: node, Version: UnknownVersion, Error: "exit 124"}
	}
	for _, tc := range []struct {
		nodes []ServerNode
		want  string
	}{
		{[]ServerNode{n("n1", "3.6.16"), n("n2", "3.6.16"), n("n3", "3.6.16")}, "etcd 3.6.16"},
		{[]ServerNode{n("n1", "3.6.16"), unknown("n2"), n("n3", "3.6.16")}, "etcd 3.6.16; n2 did not answer"},
		{[]ServerNode{n("n1", "3.6.16"), unknown("n2"), unknown("n3")}, "etcd 3.6.16; n2, n3 did not answer"},
		{[]ServerNode{n("n1", "3.6.16"), n("n2", "3.4.23"), n("n3", "3.6.16")}, "etcd 3.6.16 (n1, n3), 3.4.23 (n2)"},
		{[]ServerNode{unknown("n1"), unknown("n2")}, "etcd version unknown: no server answered"},
	} {
		if got := NewServers("etcd", "GET /version", tc.nodes).Summary; got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.nodes, got, tc.want)
		}
	}
	s := NewServers("etcd", "", []ServerNode{n("n1", "3.6.16"), unknown("n2"), n("n3", "3.4.23")})
	if got := strings.Join(s.Versions(), ","); got != "3.6.16,3.4.23" {
		t.Errorf("Versions: %q", got)
	}
}

// The servers' answers reach results.json, the report's header, the JUnit
// properties and the terminal summary, and `check report` (LoadRun) keeps
// them: they cannot be asked again once the cluster is gone.
func TestServersEverywhere(t *testing.T) {
	r := synthetic(t, 200, false)
	r.Dir = t.TempDir()
	r.Servers = NewServers("ZooKeeper", "srvr", []ServerNode{
		{Node: "n1", Version: "3.8.0", Answer: "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC"},
		{Node: "n2", Version: UnknownVersion, Error: "n2: container is paused"},
	})
	if err := WriteAll(r); err != nil {
		t.Fatal(err)
	}
	var hist bytes.Buffer
	for _, e := range r.Events {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		hist.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(r.Dir, runstore.HistoryFile), hist.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir, runstore.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Servers *Servers `json:"servers"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Servers == nil {
		t.Fatalf("results.json has no servers (%v):\n%s", err, b)
	}
	if res.Servers.Summary != "ZooKeeper 3.8.0; n2 did not answer" || len(res.Servers.Nodes) != 2 ||
		res.Servers.Nodes[0].Answer != "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC" || res.Servers.Nodes[1].Version != UnknownVersion {
		t.Errorf("results.json servers: %+v", res.Servers)
	}
	back, err := LoadRun(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Servers == nil || back.Servers.Summary != r.Servers.Summary || len(back.Servers.Nodes) != 2 {
		t.Errorf("LoadRun lost the servers: %+v", back.Servers)
	}
	html, _ := os.ReadFile(filepath.Join(r.Dir, runstore.ReportFile))
	if !strings.Contains(string(html), `id="servers">servers: <b>ZooKeeper 3.8.0; n2 did not answer</b>`) ||
		!strings.Contains(string(html), "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC") {
		t.Error("the report's header or its answers table lacks the servers")
	}
	doc, _ := parseJUnit(t, r)
	props := map[string]string{}
	for _, p := range doc.Suites[0].Props {
		props[p.Name] = p.Value
	}
	if props["servers"] != "ZooKeeper 3.8.0; n2 did not answer" || props["servers.n1"] != "3.8.0" ||
		props["servers.n1.answer"] != "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC" ||
		props["servers.n2"] != UnknownVersion || props["servers.n2.error"] != "n2: container is paused" {
		t.Errorf("JUnit properties: %v", props)
	}
	var sum bytes.Buffer
	Summary(&sum, r)
	if !strings.Contains(sum.String(), "\n  servers: ZooKeeper 3.8.0; n2 did not answer\n") {
		t.Errorf("terminal summary:\n%s", sum.String())
	}
}
