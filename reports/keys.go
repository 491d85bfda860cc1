package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

// How keys are listed. Keys are named k0, k1, …, k999: sorted as text, k10
// would come before k2 and the one invalid key of a thousand would sit in
// the middle of the table. So every list of keys a person reads is in
// natural order (digit runs compared as numbers), and where a list shows
// verdicts, the keys that failed come first: invalid, then unknown, then
// valid.

// naturalLess orders strings with their runs of digits compared as
// numbers: k2 before k10, k9x before k10a. Equal numbers with different
// zero padding (k01, k1) fall back to the text.
func naturalLess(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		i++
		j++
	}
	if len(a)-i != len(b)-j {
		return len(a)-i < len(b)-j
	}
	return a < b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// sortNatural sorts key names in natural order.
func sortNatural(keys []string) {
	sort.SliceStable(keys, func(i, j int) bool { return naturalLess(keys[i], keys[j]) })
}

// verdictRank puts failing keys first: invalid, unknown, then valid.
func verdictRank(v models.Verdict) int {
	switch v {
	case models.Invalid:
		return 0
	case models.Valid:
		return 2
	}
	return 1
}

// naturalOrder returns the indexes of keys in natural order of their names.
func naturalOrder(keys []models.KeyResult) []int {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return naturalLess(keys[idx[a]].Key, keys[idx[b]].Key) })
	return idx
}

// failingFirst returns the indexes of keys as a person should read them:
// invalid keys, then unknown ones, then valid ones, each group in natural
// order.
func failingFirst(keys []models.KeyResult) []int {
	idx := naturalOrder(keys)
	sort.SliceStable(idx, func(a, b int) bool { return verdictRank(keys[idx[a]].Verdict) < verdictRank(keys[idx[b]].Verdict) })
	return idx
}

// naturalKeys is a copy of keys in natural order, as results.json and
// JUnit list them.
func naturalKeys(keys []models.KeyResult) []models.KeyResult {
	if keys == nil {
		return nil
	}
	out := make([]models.KeyResult, 0, len(keys))
	for _, i := range naturalOrder(keys) {
		out = append(out, keys[i])
	}
	return out
}

// maxNamedKeys is how many failing keys a headline names before it says
// "and N more".
const maxNamedKeys = 5

// nameKeys lists key names for a sentence: "k3", "k3 and k17",
// "k3, k17, k200, k487, k512 and 4 more".
func nameKeys(names []string) string {
	switch {
	case len(names) == 0:
		return ""
	case len(names) == 1:
		return names[0]
	case len(names) <= maxNamedKeys:
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamedKeys], ", "), len(names)-maxNamedKeys)
}

// keysWith lists, in natural order, the names of the keys with verdict v.
func keysWith(keys []models.KeyResult, v models.Verdict) []string {
	var out []string
	for _, i := range naturalOrder(keys) {
		if keys[i].Verdict == v {
			out = append(out, keys[i].Key)
		}
	}
	return out
}

// Headline is the one sentence that says why a run is not valid, naming
// the failing keys when the run had more than one: "key k487 invalid:
// <what went wrong>", then the other failing keys ("also invalid: k3, k9
// and 4 more"). With a single key it is the checker's explanation as it
// is. A valid run's headline is its explanation (usually empty).
func Headline(res models.Result) string {
	if len(res.Keys) <= 1 || res.Verdict == models.Valid {
		return res.Explanation
	}
	invalid := keysWith(res.Keys, models.Invalid)
	unknown := keysWith(res.Keys, models.Unknown)
	explanationOf := func(key string) string {
		for i := range res.Keys {
			if res.Keys[i].Key == key {
				return res.Keys[i].Explanation
			}
		}
		return ""
	}
	var b strings.Builder
	switch {
	case res.Verdict == models.Invalid && len(invalid) > 0:
		// The run's own sentence names the key whose violation came first:
		// that key leads.
		for i, k := range invalid {
			if e := explanationOf(k); i > 0 && e != "" && strings.HasPrefix(res.Explanation, e) {
				invalid = append(append([]string{k}, invalid[:i]...), invalid[i+1:]...)
				break
			}
		}
		b.WriteString(keySentence(invalid[0], "invalid", explanationOf(invalid[0])))
		if len(invalid) > 1 {
			fmt.Fprintf(&b, "; also invalid: %s", nameKeys(invalid[1:]))
		}
		if len(unknown) > 0 {
			fmt.Fprintf(&b, "; unknown: %s", nameKeys(unknown))
		}
		if a := res.Agreement; a != nil && a.Verdict == models.Invalid {
			fmt.Fprintf(&b, "; and at the end, %s", a.Explanation)
		}
	case len(unknown) > 0 && (res.Explanation == "" || isKeyExplanation(res, res.Explanation)):
		b.WriteString(keySentence(unknown[0], "unknown", explanationOf(unknown[0])))
		if len(unknown) > 1 {
			fmt.Fprintf(&b, "; also unknown: %s", nameKeys(unknown[1:]))
		}
	case len(unknown) > 0:
		// The run as a whole is unknown (it did not complete, or the
		// check was cut short): its own reason first, then the keys.
		fmt.Fprintf(&b, "%s (unknown: %s)", res.Explanation, nameKeys(unknown))
	default:
		return res.Explanation
	}
	return b.String()
}

// isKeyExplanation tells whether the result's explanation is one of its
// unknown keys' (rather than the run's own reason).
func isKeyExplanation(res models.Result, e string) bool {
	for i := range res.Keys {
		if res.Keys[i].Verdict == models.Unknown && res.Keys[i].Explanation == e {
			return true
		}
	}
	return false
}

// keySentence is "key k487 invalid: <explanation>", without repeating the
// key when the explanation already starts with it.
func keySentence(key, verdict, explanation string) string {
	if explanation == "" {
		return fmt.Sprintf("key %s %s", key, verdict)
	}
	if strings.HasPrefix(explanation, "key "+key+" ") || strings.HasPrefix(explanation, "key "+key+":") {
		return explanation
	}
	return fmt.Sprintf("key %s %s: %s", key, verdict, explanation)
}

// opsRange is "12–40 ops each" (or "12 ops each") for a set of keys.
func opsRange(keys []models.KeyResult) string {
	lo, hi := keys[0].Ops, keys[0].Ops
	for _, k := range keys[1:] {
		lo, hi = min(lo, k.Ops), max(hi, k.Ops)
	}
	if lo == hi {
		return fmt.Sprintf("%d %s each", lo, plural(lo, "op", "ops"))
	}
	return fmt.Sprintf("%d–%d ops each", lo, hi)
}
