package compare

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// cell is one (row, fault) of the matrix, resolved once: why it cannot
// run, or the harness.Test its runs rerun with their own seeds and store,
// or why its configuration is refused.
type cell struct {
	notApplicable string
	test          *harness.Test
	err           error
}

// cellKey names a cell.
type cellKey struct {
	row   Row
	fault string
}

// cellCache holds the cells resolved so far; runs side by side
// (--parallel) ask for them at once.
type cellCache struct {
	mu    sync.Mutex
	cells map[cellKey]*cell
}

// cell is row r under fault f, resolved the first time it is asked for
// (Expand asks for every cell; a Matrix made by hand on first use).
func (m *Matrix) cell(r Row, fault string) *cell {
	m.cells.mu.Lock()
	defer m.cells.mu.Unlock()
	k := cellKey{r, fault}
	if c, ok := m.cells.cells[k]; ok {
		return c
	}
	if m.cells.cells == nil {
		m.cells.cells = map[cellKey]*cell{}
	}
	c := m.resolveCell(r, fault)
	m.cells.cells[k] = c
	return c
}

// resolveCell asks whether row r can run under fault f and, when it can,
// resolves its configuration (the store is each run's: Test.Rerun).
func (m *Matrix) resolveCell(r Row, fault string) *cell {
	if r.Faults != "" && !slices.Contains(strings.Split(r.Faults, ","), fault) {
		return &cell{notApplicable: r.FaultsWhy}
	}
	if inProcess := nemesis.InProcess(); r.Cluster == registry.ClusterInProcess && fault != nemesis.None && !slices.Contains(inProcess, fault) {
		return &cell{notApplicable: fmt.Sprintf("an in-process run injects only %s", strings.Join(inProcess, ", "))}
	}
	cfg := m.Config(r, fault, 0, "compare")
	// The rest of the question the run's checks ask (e.g. a partition of
	// a backend with one server has nothing to cut).
	if err := harness.CheckFaults(cfg); err != nil {
		var ue *usage.Error
		if errors.As(err, &ue) {
			return &cell{notApplicable: ue.Msg}
		}
		return &cell{notApplicable: err.Error()}
	}
	t, err := harness.ResolveCell(cfg, m.clients[r.Client])
	return &cell{test: t, err: err}
}

// Applicable says why a row cannot run under a fault ("" when it can).
func (m *Matrix) Applicable(r Row, fault string) string {
	return m.cell(r, fault).notApplicable
}

// runTest is run number run of row r under fault f, into store: the
// cell's Test with the run's seed, or why it cannot be had.
func (m *Matrix) runTest(r Row, fault string, run int, store string) (*harness.Test, error) {
	c := m.cell(r, fault)
	if c.err != nil {
		return nil, c.err
	}
	return c.test.Rerun(m.Seed+int64(run), store)
}

// Config is the run of row r under fault f with the given run index.
func (m *Matrix) Config(r Row, fault string, run int, store string) harness.Config {
	cfg := m.Base
	cfg.Backend, cfg.Recipe, cfg.Storage, cfg.Fencing, cfg.Cluster = r.Backend, r.Recipe, r.Storage, r.Fencing, r.Cluster
	if cfg.ClientDir = r.Client; r.Client != "" {
		cfg.Recipe = "" // the backend's default sets up its servers; the client is the recipe
	}
	cfg.Nemesis = FaultList(fault)
	cfg.Options = faultOptions(m.Base.Options, cfg.Nemesis)
	if s := r.settings(); len(s.Options) > 0 {
		// The row's own choice of the backend's flags, over the matrix's.
		opts := maps.Clone(cfg.Options)
		if opts == nil {
			opts = map[string]string{}
		}
		maps.Copy(opts, s.Options)
		cfg.Options = opts
	}
	cfg.LeaseCheck = r.LeaseCheck
	if b, ok := registry.Lookup(r.Backend); ok && m.bindWhereAble && !b.OneEndpoint {
		cfg.ClientEndpoints = harness.ClientEndpointsAll
	}
	cfg.TimeLimit = m.TimeLimit
	cfg.Seed = m.Seed + int64(run)
	cfg.Store = store
	cfg.Name = ""
	if r.ServerVersion != "" {
		cfg.ServerVersion = r.ServerVersion
	}
	cfg.Nodes = cmp.Or(r.Nodes, cfg.Nodes)
	cfg.Clients = cmp.Or(r.Clients, cfg.Clients)
	cfg.NemesisInterval = cmp.Or(r.NemesisInterval, cfg.NemesisInterval)
	if !m.timeLimitGiven {
		cfg.TimeLimit = cmp.Or(r.TimeLimit, cfg.TimeLimit)
	}
	if b, ok := registry.Lookup(r.Backend); ok && len(b.Versions) == 0 {
		cfg.ServerVersion = "" // a server version means nothing to a backend with one build
	}
	return cfg
}

// faultOptions is what of the matrix's options a cell under faults
// takes: a fault's own flag (the kleppmann preset's --clock-targets) goes
// only to the cells of a fault that owns it; a run would refuse it
// anywhere else, and the preset means it for those cells alone. Options
// no fault owns (a backend's own) go to every cell.
func faultOptions(options map[string]string, faults []string) map[string]string {
	if len(options) == 0 {
		return options
	}
	out := map[string]string{}
	for flag, v := range options {
		owners := nemesis.FlagOwners(flag)
		if len(owners) == 0 || slices.ContainsFunc(owners, func(o string) bool { return slices.Contains(faults, o) }) {
			out[flag] = v
		}
	}
	return out
}

// checkCells validates the configuration of every cell that can run, and
// refuses a matrix where none can. Each cell is resolved here, once: the
// runs take its Test.
func (m *Matrix) checkCells() error {
	cells := 0
	var whys []string // why cells cannot run, each reason once
	for _, r := range m.Rows {
		for _, f := range m.Faults {
			c := m.cell(r, f)
			if why := c.notApplicable; why != "" {
				if !slices.Contains(whys, why) {
					whys = append(whys, why)
				}
				continue
			}
			cells++
			if err := c.err; err != nil {
				var ue *usage.Error
				if errors.As(err, &ue) {
					return usage.Errorf(ue.Flag, "%s under %s: %s", r, f, ue.Msg)
				}
				return err
			}
		}
	}
	if cells == 0 {
		return usage.Errorf("faults", "no cell can run: %s", strings.Join(whys, "; "))
	}
	return nil
}
