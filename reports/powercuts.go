package reports

import (
	"fmt"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
)

// powerCutProperties are a run's power cuts as JUnit suite properties:
// the sentence, then each count; none for a run under no power fault.
func powerCutProperties(p *models.PowerCuts) []junitProperty {
	if p == nil {
		return nil
	}
	return []junitProperty{
		{"power_cuts", clean(p.Text())},
		{"power_cuts.made", fmt.Sprint(p.Made)},
		{"power_cuts.failed", fmt.Sprint(p.Failed)},
		{"power_cuts.post_cut_grants", fmt.Sprint(p.PostCutGrants)},
		{"power_cuts.dropped_files", fmt.Sprint(p.DroppedFiles)},
		{"power_cuts.dropped_bytes", fmt.Sprint(p.DroppedBytes)},
	}
}

// powerCutRow is one power cut in the report.
type powerCutRow struct {
	At, Cut, Dropped, Grants string
}

// powerCutRows renders each cut: when, on which nodes, what it dropped
// (or why it failed) and the grants after it.
func powerCutRows(p *models.PowerCuts) []powerCutRow {
	var out []powerCutRow
	for _, c := range p.Cuts {
		row := powerCutRow{At: history.Seconds(c.Time), Cut: clean(c.Fault), Grants: fmt.Sprint(c.PostCutGrants)}
		if len(c.Nodes) > 0 {
			row.Cut += " on " + clean(words.List(c.Nodes))
		}
		switch {
		case c.Failed != "":
			row.Dropped, row.Grants = clean("failed: "+c.Failed), "—"
		case c.Dropped == nil:
			row.Dropped = "not recorded"
		default:
			row.Dropped = fmt.Sprintf("%s, %d bytes", words.Plural(c.Dropped.Files, "file"), c.Dropped.Bytes)
		}
		out = append(out, row)
	}
	return out
}
