package reports

import (
	"fmt"
	"slices"
	"strings"
)

// Servers is what the lock service's servers said they are, asked once
// the run's last fault was healed: the versions a run actually tested,
// which need not be the ones asked for (results.json's servers).
type Servers struct {
	// Summary is one line: the server program and the versions that
	// answered, and the nodes that did not ("etcd 3.6.16", "ZooKeeper
	// 3.8.0; n3 did not answer").
	Summary string `json:"summary"`
	// Query says how each server was asked.
	Query string       `json:"query,omitempty"`
	Nodes []ServerNode `json:"nodes"`
}

// ServerNode is one server node's answer.
type ServerNode struct {
	Node string `json:"node"`
	// Version is the useful part of the answer (the release), or
	// UnknownVersion when the node did not answer.
	Version string `json:"version"`
	// Answer is the server's own answer, verbatim. Omitted when the node
	// did not answer.
	Answer string `json:"answer,omitempty"`
	// Error is why the node's answer is unknown. Omitted when it answered.
	Error string `json:"error,omitempty"`
}

// UnknownVersion is the version of a server that did not answer.
const UnknownVersion = "unknown"

// NewServers makes a run's Servers from each node's answer, summarized
// under the server program's name.
func NewServers(server, query string, nodes []ServerNode) *Servers {
	return &Servers{Summary: summarizeServers(server, nodes), Query: query, Nodes: nodes}
}

// summarizeServers is the line for a set of answers: one version when all
// that answered agree, else each version with its nodes; then the nodes
// that did not answer.
func summarizeServers(server string, nodes []ServerNode) string {
	var versions []string
	on := map[string][]string{}
	var silent []string
	for _, n := range nodes {
		if n.Version == UnknownVersion || n.Version == "" {
			silent = append(silent, n.Node)
			continue
		}
		if _, seen := on[n.Version]; !seen {
			versions = append(versions, n.Version)
		}
		on[n.Version] = append(on[n.Version], n.Node)
	}
	var parts []string
	for _, v := range versions {
		if len(versions) == 1 {
			parts = append(parts, v)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", v, strings.Join(on[v], ", ")))
	}
	s := server
	switch {
	case len(parts) > 0:
		s += " " + strings.Join(parts, ", ")
	case len(silent) > 0:
		s += " version unknown"
	}
	switch {
	case len(silent) == 1 && len(parts) > 0:
		s += "; " + silent[0] + " did not answer"
	case len(silent) > 1 && len(parts) > 0:
		s += "; " + strings.Join(silent, ", ") + " did not answer"
	case len(silent) > 0:
		s += ": no server answered"
	}
	return s
}

// Versions are the distinct versions that answered, in the order first
// seen.
func (s *Servers) Versions() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, n := range s.Nodes {
		if n.Version != UnknownVersion && n.Version != "" && !slices.Contains(out, n.Version) {
			out = append(out, n.Version)
		}
	}
	return out
}

// junitProperties are the servers' answers as suite properties: the
// summary, each node's version, and its verbatim answer or error.
func (s *Servers) junitProperties() []junitProperty {
	if s == nil {
		return nil
	}
	ps := []junitProperty{{"servers", clean(s.Summary)}}
	for _, n := range s.Nodes {
		name := "servers." + clean(n.Node)
		ps = append(ps, junitProperty{name, clean(n.Version)})
		if n.Answer != "" && n.Answer != n.Version {
			ps = append(ps, junitProperty{name + ".answer", clean(n.Answer)})
		}
		if n.Error != "" {
			ps = append(ps, junitProperty{name + ".error", clean(n.Error)})
		}
	}
	return ps
}
