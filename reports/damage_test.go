package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/models"
)

// Every output of a run carries its damage: results.json, the summary,
// the report's header and the JUnit properties.
func TestDamageInEveryReport(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		r := synthetic(t, 5000, fenced) // a holder frozen in section 997
		want := models.ComputeDamage(r.Ops)
		if want.LostMin == nil {
			t.Fatalf("fenced=%v: the synthetic history has a final read, yet no lost-update figure: %+v", fenced, want.Keys)
		}
		if fenced && (*want.LostMax != 0 || want.StaleWritesAccepted != 0 || want.StaleRefused == 0) {
			t.Fatalf("fenced: lost %d–%d, stale accepted %d, refused %d; want nothing lost or accepted, some refused",
				*want.LostMin, *want.LostMax, want.StaleWritesAccepted, want.StaleRefused)
		}
		if !fenced && (*want.LostMin == 0 || want.StaleWritesAccepted == 0) {
			t.Fatalf("unfenced: lost %d, stale accepted %d; want both above 0", *want.LostMin, want.StaleWritesAccepted)
		}

		var buf bytes.Buffer
		if err := WriteResults(&buf, r); err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Damage map[string]any `json:"damage"`
		}
		if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"acknowledged", "unknown_writes", "lost_min", "lost_max", "lost_share_min", "lost_share_max",
			"stale_writes_accepted", "stale_refused", "overlap_s", "keys"} {
			if _, ok := raw.Damage[f]; !ok {
				t.Errorf("results.json damage has no %q: %s", f, buf.String())
			}
		}
		var res Results
		if err := json.Unmarshal(buf.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if *res.Damage.LostMin != *want.LostMin || res.Damage.Acknowledged != want.Acknowledged || res.Damage.Keys[0].Final != models.FinalOK {
			t.Errorf("results.json damage %+v, want %+v", res.Damage, want)
		}

		buf.Reset()
		Summary(&buf, r)
		if !strings.Contains(buf.String(), "damage: "+want.Text()) {
			t.Errorf("the summary has no damage line:\n%s", buf.String())
		}

		buf.Reset()
		if err := WriteHTML(&buf, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), `id="damage"`) || !strings.Contains(buf.String(), want.LostText()) {
			t.Errorf("the report's header has no damage (%q)", want.LostText())
		}

		doc, _ := parseJUnit(t, r)
		props := map[string]string{}
		for _, p := range doc.Suites[0].Props {
			props[p.Name] = p.Value
		}
		if props["damage"] != want.Text() || props["damage.lost_min"] == "" || props["damage.stale_refused"] == "" {
			t.Errorf("JUnit damage properties %v", props)
		}
	}
}
