package models

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/binomial"
	"github.com/fencecheck/fencecheck/internal/words"
)

// A verdict of valid means something only if safety was at stake. An
// exposure is a moment when it was: a lease holder that had been
// superseded — a newer holder of the same key had been granted the lock
// while the old one still believed it held it — sent an op that, for all
// the old holder knew, it was still entitled to send. That is the only
// moment fencing has any work to do; a run without one could not tell a
// safe lock from an unsafe one.
//
// Exposures are found from the history alone, so they are counted the same
// way for every backend, recipe, storage and user client:
//
//   - A term is one process's hold of one key: from its ok acquire to its
//     release's invocation, or to the op that told it the lease was gone
//     (lease-lost), or to an op of unknown outcome (the process is retired
//     there) — the same interval Beliefs draws.
//   - Terms are ordered by token, and by the order of their grants where
//     tokens tie (a recipe without tokens: every token is 0). A term is
//     superseded once a newer term's grant has completed while it is
//     still open.
//   - A late op is a read or write of a superseded term that completed
//     after the newer grant did. An op the storage refused as stale
//     (fenced) is late by the storage's own word, and one the client did
//     not send because it saw its lease had run out (lease-lost) by the
//     client's own word, whatever the grants say: the holder outlived its
//     lease, whether or not anyone had been granted it yet.
//
// Each superseded term that sent a late op is one exposure, and it ended
// in one of four ways (the worst of its late ops):
//
//   - admitted: a late write returned ok after an op of a newer term had
//     been admitted (had returned ok): the storage took the stale write.
//   - refused: the storage refused a late op as stale (fail, fenced), or
//     a resource kept in the lock service refused it because the lock
//     was no longer the op's (fail, guard-failed).
//   - not sent: the client saw its lease was gone and never sent the op
//     (fail, lease-lost).
//   - unknown: a late op's outcome is unknown (info).
//
// A holder no newer grant superseded, whose token went down (the service
// handed it out below one it had already granted: a counter lost in a
// crash or a failover), is not superseded, and the storage refuses its
// ops because of the service's lost counter. Such refusals are counted
// apart (RefusedWentBack), beside the contradicted grants, not as
// exposures: they would make the bound read as if the lock had been
// tested that many times.
//
// Late ops that harmed nothing and tested nothing are counted apart, not
// as exposures: a late write that reached the storage before any newer
// term's op did (nothing newer to fence against), or one that failed for
// another reason. So is a superseded term that sent no late op at all
// ("outlived idle": two holders at once, but the old one did nothing).

// ExposureOutcome is how an exposure ended.
type ExposureOutcome string

const (
	ExposureAdmitted ExposureOutcome = "admitted"
	ExposureRefused  ExposureOutcome = "refused"
	ExposureNotSent  ExposureOutcome = "not-sent"
	ExposureUnknown  ExposureOutcome = "unknown"
)

// severity orders the outcomes of a term's late ops: the worst one names
// the exposure. 0 is no late op; harmless late ops are 1.
func severity(o ExposureOutcome) int {
	switch o {
	case ExposureAdmitted:
		return 5
	case ExposureRefused:
		return 4
	case ExposureUnknown:
		return 3
	case ExposureNotSent:
		return 2
	}
	return 0
}

// Exposure is one superseded holder that sent a late op.
type Exposure struct {
	Key     string          `json:"key"`
	Process int             `json:"process"`
	Token   uint64          `json:"token"`
	Outcome ExposureOutcome `json:"outcome"`
	// Op is the history index of the invocation of the late op that
	// decided the outcome; Time is when that op completed (ns).
	Op   int64 `json:"op"`
	Time int64 `json:"time"`
}

// ExposureCounts are the exposures of a key or of a run, by outcome.
type ExposureCounts struct {
	// Exposures = Admitted + Refused + NotSent + Unknown.
	Exposures int `json:"exposures"`
	Admitted  int `json:"admitted"`
	Refused   int `json:"refused"`
	NotSent   int `json:"not_sent"`
	Unknown   int `json:"unknown"`
	// Harmless counts superseded holders whose late ops all reached the
	// storage ahead of every newer holder's op, or failed on their own.
	Harmless int `json:"harmless"`
	// OutlivedIdle counts superseded holders that sent no late op: two
	// holders at once with nothing at stake.
	OutlivedIdle int `json:"outlived_idle"`
	// RefusedWentBack counts holders that no newer grant superseded, whose
	// token the service had handed out below one it had already granted
	// (a token that went down), and whose ops the storage refused for
	// it: the fence at work, but against the service's own lost counter,
	// not a superseded holder's late op. They go with the contradicted
	// grants; the bound counts exposures only.
	RefusedWentBack int `json:"refused_went_back"`
}

// Add pools other into c: the counts of several runs are their sums.
func (c *ExposureCounts) Add(o ExposureCounts) {
	c.Exposures += o.Exposures
	c.Admitted += o.Admitted
	c.Refused += o.Refused
	c.NotSent += o.NotSent
	c.Unknown += o.Unknown
	c.Harmless += o.Harmless
	c.OutlivedIdle += o.OutlivedIdle
	c.RefusedWentBack += o.RefusedWentBack
}

// Decided is the exposures whose outcome is known: the trials a bound on
// the chance of admission is taken over (an unknown outcome is neither).
func (c ExposureCounts) Decided() int { return c.Exposures - c.Unknown }

// KeyExposures are one key's counts.
type KeyExposures struct {
	Key string `json:"key"`
	ExposureCounts
}

// MaxListedExposures bounds Exposures.List: a day-long run keeps counts,
// not every exposure.
const MaxListedExposures = 100

// Exposures are a run's exposures: the totals, per key, the first ones
// one by one, and why there were none when there were none.
type Exposures struct {
	ExposureCounts
	Keys []KeyExposures `json:"keys"`
	// List holds the first MaxListedExposures exposures in the order they
	// were decided.
	List []Exposure `json:"list,omitempty"`
	// Reason is the likely reason a run had no exposure, when one is
	// known (see NoExposureReason); "" otherwise.
	Reason string `json:"reason,omitempty"`
}

// Reconcile makes the exposures agree with the verdict. An exposure is
// counted as admitted when a late write returned after a newer holder's
// op had returned; when the check nonetheless found the history valid, it
// could place every such write before the newer op (their intervals
// overlapped), so no stale write was admitted over a newer one in any
// order the storage can have taken: those writes are harmless.
func (x Exposures) Reconcile(v Verdict) Exposures {
	if v != Valid || x.Admitted == 0 {
		return x
	}
	move := func(c *ExposureCounts) {
		c.Harmless += c.Admitted
		c.Exposures -= c.Admitted
		c.Admitted = 0
	}
	move(&x.ExposureCounts)
	keys := make([]KeyExposures, len(x.Keys))
	copy(keys, x.Keys)
	for i := range keys {
		move(&keys[i].ExposureCounts)
	}
	x.Keys = keys
	var list []Exposure
	for _, e := range x.List {
		if e.Outcome != ExposureAdmitted {
			list = append(list, e)
		}
	}
	x.List = list
	return x
}

// Exercised reports whether safety was at stake at least once.
func (c ExposureCounts) Exercised() bool { return c.Exposures > 0 }

// Text is the exposures in one clause, as a verdict line carries them:
// "4 holders outlived their lease; all 4 late ops reached the storage and
// were refused".
func (c ExposureCounts) Text() string {
	if c.Exposures == 0 {
		s := "no holder outlived its lease and then acted"
		if c.OutlivedIdle > 0 || c.Harmless > 0 {
			s = "no superseded holder's late op met a newer holder's at the storage"
		}
		if aside := c.asideText(); aside != "" {
			s += " (" + aside + ")"
		}
		return s
	}
	s := fmt.Sprintf("%s outlived their lease", words.PluralOf(c.Exposures, "holder", "holders"))
	if c.Exposures == 1 {
		s = "1 holder outlived its lease"
	}
	switch {
	case c.Refused == c.Exposures:
		s += "; " + allOf(c.Exposures, "its late op reached the storage and was refused",
			"both late ops reached the storage and were refused", "all %d late ops reached the storage and were refused")
	case c.Admitted == c.Exposures:
		s += "; " + allOf(c.Exposures, "its late write was admitted", "both late writes were admitted", "all %d late writes were admitted")
	case c.NotSent == c.Exposures:
		s += "; " + allOf(c.Exposures, "it saw its lease was gone and did not send its op",
			"both saw their lease was gone and did not send their ops", "all %d saw their lease was gone and did not send their ops")
	default:
		s += ": " + c.breakdown()
	}
	if aside := c.asideText(); aside != "" {
		s += " (" + aside + ")"
	}
	return s
}

// allOf says a thing of all n exposures: one for 1, two for 2, many
// (with a %d for n) otherwise.
func allOf(n int, one, two, many string) string {
	switch n {
	case 1:
		return one
	case 2:
		return two
	}
	return fmt.Sprintf(many, n)
}

// breakdown lists the outcomes that occurred: "2 refused by the storage,
// 1 admitted".
func (c ExposureCounts) breakdown() string {
	return strings.Join(nonZero(
		count{c.Refused, "refused by the storage"},
		count{c.NotSent, "not sent (the client saw its lease was gone)"},
		count{c.Unknown, "of unknown outcome"},
		count{c.Admitted, "admitted"}), ", ")
}

// count is a number and what it counts, for nonZero.
type count struct {
	n    int
	what string
}

// nonZero phrases the counts above zero, in order: "2 refused".
func nonZero(cs ...count) []string {
	var parts []string
	for _, c := range cs {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return parts
}

// asideText says what was at stake but not counted: superseded holders
// that sent nothing late, and late ops that met nothing newer.
func (c ExposureCounts) asideText() string {
	var parts []string
	if c.OutlivedIdle > 0 {
		parts = append(parts, fmt.Sprintf("%s outlived by a successor but sent nothing late", words.PluralOf(c.OutlivedIdle, "more holder was", "more holders were")))
	}
	if c.Harmless > 0 {
		parts = append(parts, fmt.Sprintf("%s late op reached the storage ahead of the newer holder or failed on its own", words.PluralOf(c.Harmless, "holder's", "holders'")))
	}
	if c.RefusedWentBack > 0 {
		parts = append(parts, c.WentBackText())
	}
	return strings.Join(parts, "; ")
}

// WentBackText says the refusals of tokens that went back, apart from the
// exposures: "the storage refused 843 holders whose token the service had
// handed out below one it had already granted (not exposures: counted
// with the contradicted grants, not in the bound)"; "" when there were
// none.
func (c ExposureCounts) WentBackText() string {
	if c.RefusedWentBack == 0 {
		return ""
	}
	return fmt.Sprintf("the storage refused %s whose token the service had handed out below one it had already granted (not exposures: counted with the contradicted grants, not in the bound)",
		words.PluralOf(c.RefusedWentBack, "holder", "holders"))
}

// Short is the exposures as a compare cell or an index row says them:
// "31 exposures, 31 refused", "4 exposures, 2 admitted, 2 refused", "0
// exposures".
func (c ExposureCounts) Short() string {
	s := words.Plural(c.Exposures, "exposure")
	if c.Exposures == 0 {
		return s
	}
	parts := nonZero(count{c.Admitted, "admitted"}, count{c.Refused, "refused"}, count{c.NotSent, "not sent"}, count{c.Unknown, "unknown"})
	return s + ", " + strings.Join(parts, ", ")
}

// BoundText is what the exposures say about the chance that one is
// admitted, pooled over one run or many: with none admitted, the
// one-sided 95 % Clopper–Pearson upper bound ("0 of 43 exposures
// admitted: at most 6.7 % per exposure (95 %)"); with some, the rate and
// its two-sided 95 % interval. Exposures of unknown outcome are left out
// of the trials. "" when no exposure's outcome is known: there is nothing
// to bound.
func (c ExposureCounts) BoundText() string {
	n := c.Decided()
	if n == 0 {
		return ""
	}
	if c.Admitted == 0 {
		return fmt.Sprintf("0 of %d admitted: at most %s per exposure (95 %%)", n, pct(binomial.Upper(0, n, 0.95)))
	}
	lo, hi := binomial.Interval(c.Admitted, n, 0.95)
	return fmt.Sprintf("%d of %d admitted: %s per exposure (95 %% interval %s–%s)", c.Admitted, n, pct(float64(c.Admitted)/float64(n)), strings.TrimSuffix(pct(lo), " %"), pct(hi))
}

// Bound is the numbers BoundText says: the admitted share of the decided
// exposures and its 95 % bounds (the lower bound is 0 and the upper one
// one-sided when none was admitted). ok is false when no exposure's
// outcome is known.
func (c ExposureCounts) Bound() (rate, lo, hi float64, ok bool) {
	n := c.Decided()
	if n == 0 {
		return 0, 0, 1, false
	}
	if c.Admitted == 0 {
		return 0, 0, binomial.Upper(0, n, 0.95), true
	}
	lo, hi = binomial.Interval(c.Admitted, n, 0.95)
	return float64(c.Admitted) / float64(n), lo, hi, true
}

func pct(x float64) string {
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", 100*x), ".0")
	return s + " %"
}

// NotExercised is the words for a run that put safety at stake nowhere.
const NotExercised = "no holder outlived its lease, so this run cannot tell a safe lock from an unsafe one"

// WithExposures attaches a run's exposures to its result, made to agree
// with its verdict (Reconcile), and holds a valid verdict to min: a run
// with fewer exposures than min could not tell a safe lock from an unsafe
// one, and is unknown. A verdict that is not valid stays as it is: a
// violation found is a violation, however few the exposures.
func (res Result) WithExposures(x Exposures, min int) Result {
	x = x.Reconcile(res.Verdict)
	res.Exposures = &x
	if res.Verdict != Valid || x.Exposures >= min {
		return res
	}
	res.Verdict = Unknown
	res.Explanation = fmt.Sprintf("%s, fewer than --min-exposures %d: %s", words.Plural(x.Exposures, "exposure"), min, NotExercised)
	if x.Exposures > 0 {
		res.Explanation = fmt.Sprintf("%s, fewer than --min-exposures %d: too few moments put safety at stake to believe a pass", words.Plural(x.Exposures, "exposure"), min)
	}
	if x.Reason != "" {
		res.Explanation += " (" + x.Reason + ")"
	}
	return res
}
