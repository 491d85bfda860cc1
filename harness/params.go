package harness

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/units"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/reports"
)

// sysInfo describes the system for the report; a system that could not be
// set up is described by its test id alone.
func sysInfo(sys System, testID string) map[string]string {
	if sys != nil {
		return sys.Info()
	}
	if testID != "" {
		return map[string]string{"docker test id": testID}
	}
	return nil
}

// params lists everything needed to rerun the test, in a stable order.
func (t *Test) params(info map[string]string) []reports.Param {
	cfg := &t.cfg
	recipe := cfg.Recipe
	if t.client != nil {
		recipe = t.client.Manifest.Name + " (client)"
	}
	p := []reports.Param{
		{Name: "backend", Value: cfg.Backend}, {Name: "recipe", Value: recipe}, {Name: "storage", Value: cfg.Storage}, {Name: "fencing", Value: t.fencingLabel()},
		{Name: "nemesis", Value: strings.Join(cfg.Nemesis, ",")}, {Name: "clients", Value: fmt.Sprint(cfg.Clients)}, {Name: "keys", Value: fmt.Sprint(cfg.Keys)},
		{Name: "cluster", Value: string(cfg.Cluster)}, {Name: "nodes", Value: fmt.Sprint(t.servers)}, {Name: "server-version", Value: cfg.ServerVersion}, {Name: "time-limit", Value: cfg.TimeLimit.String()}, {Name: "lease-ttl", Value: cfg.LeaseTTL.String()},
		{Name: "work", Value: cfg.Work.String()}, {Name: "hold", Value: cfg.Dwell.String()}, {Name: "read-mix", Value: strconv.FormatFloat(cfg.ReadMix, 'g', -1, 64)},
		{Name: "pause-duration", Value: cfg.PauseDuration.String()},
		{Name: "nemesis-interval", Value: cfg.NemesisInterval.String()}, {Name: "op-timeout", Value: cfg.OpTimeout.String()}, {Name: "acquire-timeout", Value: cfg.AcquireTimeout.String()},
		{Name: "check-timeout", Value: cfg.CheckTimeout.String()}, {Name: "check-memory", Value: units.FormatBytes(cfg.CheckMemory)},
		{Name: "min-exposures", Value: fmt.Sprint(cfg.MinExposures)}, {Name: "exposures", Value: fmt.Sprint(cfg.Exposures)},
	}
	for _, o := range registry.Flags() {
		p = append(p, reports.Param{Name: o.Name, Value: cfg.Options[o.Name]})
	}
	for _, f := range nemesis.Flags() {
		p = append(p, reports.Param{Name: f.Name, Value: cfg.Options[f.Name]})
	}
	if cfg.ServerImage != "" {
		// The image decides the version; the servers' answer says which.
		for i := range p {
			if p[i].Name == "server-version" {
				p[i].Value = ""
			}
		}
		p = append(p, reports.Param{Name: "server-image", Value: cfg.ServerImage})
	}
	if cfg.GrantAfterEachCrash {
		p = append(p, reports.Param{Name: "grant-after-each-crash", Value: "true"})
	}
	if cfg.PowerLayer {
		p = append(p, reports.Param{Name: "power-layer", Value: "true"})
	}
	if cl := t.client; cl != nil {
		p = append(p, reports.Param{Name: "client", Value: cl.Manifest.Name}, reports.Param{Name: "client-dir", Value: cfg.ClientDir},
			reports.Param{Name: "client-hash", Value: cl.Hash()})
	}
	p = t.endpointParams(p)
	if cfg.Hosts != "" {
		p = append(p, reports.Param{Name: "hosts", Value: cfg.Hosts})
	}
	p = append(p, reports.Param{Name: "seed", Value: fmt.Sprint(cfg.Seed)})
	for _, k := range sortedKeys(info) {
		p = append(p, reports.Param{Name: k, Value: info[k]})
	}
	return p
}
