package models

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// A power cut can only be shown to have lost nothing if the lock service
// granted the lock again after it: a lost grant shows when a later grant
// contradicts it (contradiction.go), and a run that granted nothing after
// its cuts passes a service that forgot everything. So a run under a
// power fault counts, for each cut, its post-cut grants:
//
//   - A post-cut grant is an ok acquire called after a cut began (the
//     fault's invoke, recorded once the servers were killed and the
//     unsynced data dropped) and before the next cut began, of a key
//     that had a grant acknowledged (returned) before the cut: a grant
//     the cut could have lost and this one could contradict, by its
//     token or, for a recipe without tokens, by its holder.
//   - A cut that failed (its fault's start recorded an error: the kill
//     or the drop did not happen) lost what it lost at an unknown moment
//     or nothing at all.
//   - What each cut dropped (files and bytes the layer forgot) is the
//     fault's own report (Drop), kept beside the history in results.json:
//     a cut that dropped nothing tested nothing a kill does not.
//
// A valid verdict under a power fault needs at least one cut made, none
// failed, and at least one post-cut grant (WithPowerCuts); otherwise the
// run is unknown, as a run under a holder fault with no exposure is.

// powerFaults are the faults that cut a server's power: nemesis.PowerFaults,
// which this package cannot import (harness's TestModelsCountEveryPowerFault
// holds the two lists together). A power fault missing here is not counted
// at all: its runs are held to no post-cut grant and record no drop.
var powerFaults = []string{"power-loss", "power-loss-leader", "power-loss-majority", "power-loss-all"}

// PowerFault reports whether f is a fault that cuts a server's power.
func PowerFault(f string) bool { return slices.Contains(powerFaults, f) }

// Drop is what one power cut made the filesystem layer forget, summed over
// the nodes it cut, as the fault reported it. A fault's drops are in the
// order of its cuts, which is the order of its invokes in the history.
type Drop struct {
	Fault string   `json:"fault"`
	Nodes []string `json:"nodes"`
	Files int      `json:"files"`
	Bytes int64    `json:"bytes"`
	// Went is when the last of the cut's nodes lost its power (ns, the
	// history's time); 0 when not known (then the cut's start stands
	// for it).
	Went int64 `json:"went,omitempty"`
}

// PowerCut is one power cut of a run.
type PowerCut struct {
	Fault string   `json:"fault"`
	Nodes []string `json:"nodes,omitempty"`
	// Time is when the cut began (ns, the fault's invoke; a failed cut's
	// info).
	Time int64 `json:"time"`
	// Went is when the power went on the last of its nodes (ns), where
	// the layer said: a one-instant cut records its start first and cuts
	// up to a second later. 0 when not known.
	Went int64 `json:"went,omitempty"`
	// Failed says why the cut was not made; "" when it was.
	Failed string `json:"failed,omitempty"`
	// Dropped is what the cut made the layer forget; nil when it failed
	// or the run did not record it.
	Dropped *Drop `json:"dropped,omitempty"`
	// PostCutGrants counts the grants after this cut and before the next
	// that a grant lost in it could contradict.
	PostCutGrants int `json:"post_cut_grants"`
}

// PowerCuts are a run's power cuts and what they proved.
type PowerCuts struct {
	// Made and Failed count the cuts.
	Made   int `json:"made"`
	Failed int `json:"failed"`
	// PostCutGrants sums the cuts' post-cut grants.
	PostCutGrants int `json:"post_cut_grants"`
	// DroppedFiles and DroppedBytes sum what the made cuts dropped (file
	// counts are per node: a file dropped on three nodes counts three);
	// DropsKnown is false when some made cut's drop was not recorded.
	DroppedFiles int   `json:"dropped_files"`
	DroppedBytes int64 `json:"dropped_bytes"`
	DropsKnown   bool  `json:"drops_known"`
	// Cuts are the cuts in the order they began.
	Cuts []PowerCut `json:"cuts"`
}

// Drops are the cuts' drops as the faults reported them, for a run read
// back from results.json to count its cuts again.
func (p *PowerCuts) Drops() []Drop {
	if p == nil {
		return nil
	}
	var out []Drop
	for _, c := range p.Cuts {
		if c.Dropped != nil {
			out = append(out, *c.Dropped)
		}
	}
	return out
}

// CountPowerCuts counts the power cuts of a run under nemesis (the faults
// asked for) from its ops and fault intervals, with drops as the faults
// reported them (nil: not recorded). It is nil when no power fault was
// asked for and none is in the history.
func CountPowerCuts(ops []history.Op, faults []history.Fault, nemesis []string, drops []Drop) *PowerCuts {
	asked := slices.ContainsFunc(nemesis, PowerFault)
	p := &PowerCuts{Cuts: []PowerCut{}, DropsKnown: true}
	next := map[string]int{} // the fault's next drop
	for _, f := range faults {
		if !PowerFault(f.F) {
			continue
		}
		c := PowerCut{Fault: f.F, Nodes: f.Nodes, Time: f.Start}
		switch {
		case f.Start == f.End && f.Error == history.NothingToHit:
			continue // the fault found nothing to cut: no cut, no failure
		case f.Start == f.End && f.Error != "":
			c.Failed = f.Error
			p.Failed++
		default:
			p.Made++
			if d, ok := nthDrop(drops, f.F, next[f.F]); ok {
				c.Dropped = &d
				c.Went = d.Went
				p.DroppedFiles += d.Files
				p.DroppedBytes += d.Bytes
			} else {
				p.DropsKnown = false
			}
			next[f.F]++
		}
		p.Cuts = append(p.Cuts, c)
	}
	if !asked && len(p.Cuts) == 0 {
		return nil
	}
	slices.SortStableFunc(p.Cuts, func(a, b PowerCut) int { return int(a.Time - b.Time) })
	p.countGrants(ops)
	return p
}

// nthDrop is fault f's n-th drop.
func nthDrop(drops []Drop, f string, n int) (Drop, bool) {
	for _, d := range drops {
		if d.Fault != f {
			continue
		}
		if n == 0 {
			return d, true
		}
		n--
	}
	return Drop{}, false
}

// countGrants gives each made cut its post-cut grants.
func (p *PowerCuts) countGrants(ops []history.Op) {
	var made []int // indexes of made cuts in time order
	for i, c := range p.Cuts {
		if c.Failed == "" {
			made = append(made, i)
		}
	}
	for _, o := range ops {
		if o.F != history.Acquire || o.Type != history.OK {
			continue
		}
		// The last made cut that began before this grant was called. A
		// grant called before the power went, though after the cut was
		// announced, proves nothing about it (a one-instant cut announces
		// its start up to a second before the power goes).
		at := -1
		for _, i := range made {
			if p.Cuts[i].Time < o.Call {
				at = i
			}
		}
		if at < 0 || o.Call <= p.Cuts[at].Went || !grantedBefore(ops, o.Key, max(p.Cuts[at].Time, p.Cuts[at].Went)) {
			continue
		}
		p.Cuts[at].PostCutGrants++
		p.PostCutGrants++
	}
}

// grantedBefore reports whether key had a grant acknowledged before t.
func grantedBefore(ops []history.Op, key string, t int64) bool {
	return slices.ContainsFunc(ops, func(o history.Op) bool {
		return o.F == history.Acquire && o.Type == history.OK && o.Key == key && o.Return < t
	})
}

// Unproven says why a run under power faults cannot be valid: a cut
// failed, no cut was made, or nothing was granted after any cut; "" when
// the cuts were made and granted after.
func (p *PowerCuts) Unproven() string {
	if p == nil {
		return ""
	}
	if i := slices.IndexFunc(p.Cuts, func(c PowerCut) bool { return c.Failed != "" }); i >= 0 {
		c := p.Cuts[i]
		return fmt.Sprintf("the %s at %s failed (%s), so what it lost, if anything, is not known", c.Fault, secs(c.Time), c.Failed)
	}
	if p.Made == 0 {
		return "no power cut was made (the run ended before its first): it cannot tell whether a cut loses a grant"
	}
	if p.PostCutGrants > 0 {
		return ""
	}
	first := p.Cuts[0]
	if p.Made == 1 {
		return fmt.Sprintf("the service granted nothing after the cut at %s (%s): a grant it lost could not be contradicted, so the run cannot tell whether the cut lost one", secs(first.Time), cutText(first))
	}
	return fmt.Sprintf("the service granted nothing after any of its %d power cuts (the first at %s, %s): a grant they lost could not be contradicted, so the run cannot tell whether they lost one", p.Made, secs(first.Time), cutText(first))
}

// cutText names a cut: "power-loss-all on n1, n2 and n3".
func cutText(c PowerCut) string {
	return faultText(history.Fault{F: c.Fault, Nodes: c.Nodes})
}

// Text is the cuts in one clause: "3 power cuts, 57 post-cut grants;
// dropped 6 files, 24 KiB in all"; "… every cut dropped nothing" when so.
func (p *PowerCuts) Text() string {
	s := fmt.Sprintf("%s, %s", words.Plural(p.Made, "power cut"), words.Plural(p.PostCutGrants, "post-cut grant"))
	if p.Failed > 0 {
		s += fmt.Sprintf(", %d failed", p.Failed)
	}
	return s + "; " + p.DropText()
}

// DropText says what the cuts dropped: "dropped 6 files, 24 KiB in all";
// "every cut dropped nothing (the servers had synced all they wrote)".
func (p *PowerCuts) DropText() string {
	switch {
	case p.Made == 0:
		return "nothing dropped"
	case p.DroppedFiles == 0 && p.DroppedBytes == 0 && p.DropsKnown:
		return "every cut dropped nothing (the servers had synced all they wrote)"
	}
	s := fmt.Sprintf("dropped %s, %s in all", words.Plural(p.DroppedFiles, "file"), kib(p.DroppedBytes))
	if !p.DropsKnown {
		s += " (some cuts' drops were not recorded)"
	}
	return s
}

func kib(b int64) string {
	if b < 1024 {
		return fmt.Sprintf("%d bytes", b)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(b)/1024), ".0") + " KiB"
}

// WithPowerCuts attaches a run's power cuts to its result and holds a
// valid verdict to them: a run under a power fault whose cuts failed, or
// that granted nothing after them, is unknown (Unproven). A verdict that
// is not valid stays as it is.
func (res Result) WithPowerCuts(p *PowerCuts) Result {
	if p == nil {
		return res
	}
	res.PowerCuts = p
	if res.Verdict != Valid {
		return res
	}
	if why := p.Unproven(); why != "" {
		res.Verdict, res.Explanation = Unknown, why
	}
	return res
}
