package models

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// A verdict says whether a recipe is unsafe; the damage says how unsafe:
// how many acknowledged updates the storage lost, how many stale writes it
// let through, how many stale ops fencing refused, and for how long mutual
// exclusion was broken.
//
// Lost updates are counted exactly thanks to the counter workload: every
// write stores the value its section read plus one, and the storage starts
// at 0. Follow the final value V back: the write that stored V read V-1,
// which some write stored, and so on down to 0. So exactly one applied
// write per value 1..V is in the final value, and every other write is
// lost. A write whose outcome is unknown (info) may be the one in the chain
// for its value, so with unknown writes the count of lost acknowledged
// writes is a range; without them it is exact. Writes that failed
// certainly did not apply and never count.

// FinalRead says what the history holds of a key's final read: the read
// under a fresh lock after every fault was healed.
type FinalRead string

const (
	// FinalOK: the final read returned a value.
	FinalOK FinalRead = "ok"
	// FinalMissing: there is no final read of the key (the run ended or
	// was interrupted before it, or its acquire did not succeed).
	FinalMissing FinalRead = "missing"
	// FinalUnknown: the final read was sent but did not return a value
	// (it failed or its outcome is unknown).
	FinalUnknown FinalRead = "unknown"
)

// KeyDamage is the damage done to one key.
type KeyDamage struct {
	Key string `json:"key"`
	// Acknowledged counts the writes that returned ok.
	Acknowledged int `json:"acknowledged"`
	// UnknownWrites counts the writes whose outcome is unknown: they may
	// or may not have applied.
	UnknownWrites int `json:"unknown_writes"`
	// Final says whether the final read returned a value; FinalValue is it.
	Final      FinalRead `json:"final_read"`
	FinalValue *int64    `json:"final_value,omitempty"`
	// LostMin and LostMax bound the acknowledged writes whose effect is
	// not in the final value (equal when no write's outcome is unknown);
	// nil when they cannot be told (Note says why).
	LostMin *int `json:"lost_min"`
	LostMax *int `json:"lost_max"`
	// StaleWritesAccepted counts ok writes whose token was below one the
	// storage had already admitted: an ok read or write with a higher
	// token returned before the write did (see staleAccepted).
	StaleWritesAccepted int `json:"stale_writes_accepted"`
	// StaleRefused counts reads and writes the storage refused as stale
	// (fail with error fenced).
	StaleRefused int `json:"stale_refused"`
	// Overlaps and OverlapS: the intervals in which two or more processes
	// believed they held this key's lease at once, and their total length
	// in seconds (see Beliefs).
	Overlaps int     `json:"overlaps"`
	OverlapS float64 `json:"overlap_s"`
	// Note says why the lost updates cannot be told, or what was assumed.
	Note string `json:"note,omitempty"`
}

// LostShare is the lost acknowledged updates as shares of the acknowledged
// ones: [min, max]. ok is false when it cannot be told or nothing was
// acknowledged.
func (k *KeyDamage) LostShare() (lo, hi float64, ok bool) {
	return share(k.LostMin, k.LostMax, k.Acknowledged)
}

func share(lo, hi *int, of int) (float64, float64, bool) {
	if lo == nil || hi == nil || of == 0 {
		return 0, 0, false
	}
	return float64(*lo) / float64(of), float64(*hi) / float64(of), true
}

// Damage is the damage done over a whole run: the sums over its keys.
type Damage struct {
	Acknowledged  int `json:"acknowledged"`
	UnknownWrites int `json:"unknown_writes"`
	// LostMin and LostMax are summed over the keys whose lost updates
	// could be told (Measured of them); nil when none could.
	LostMin *int `json:"lost_min"`
	LostMax *int `json:"lost_max"`
	// LostShareMin and LostShareMax are LostMin and LostMax over the
	// acknowledged writes of the measured keys; nil when none could be
	// told or none was acknowledged.
	LostShareMin *float64 `json:"lost_share_min"`
	LostShareMax *float64 `json:"lost_share_max"`
	// Measured counts the keys whose lost updates could be told;
	// Unmeasured names the others.
	Measured   int      `json:"measured_keys"`
	Unmeasured []string `json:"unmeasured_keys,omitempty"`

	StaleWritesAccepted int     `json:"stale_writes_accepted"`
	StaleRefused        int     `json:"stale_refused"`
	Overlaps            int     `json:"overlaps"`
	OverlapS            float64 `json:"overlap_s"`
	// Tokenless: no acquire carried a token, so a stale write cannot be
	// told from a fresh one and StaleWritesAccepted is 0 by construction.
	Tokenless bool        `json:"tokenless,omitempty"`
	Keys      []KeyDamage `json:"keys"`
}

// Text is the damage in one line, e.g. "lost 3 of 120 acknowledged updates
// (2.5%), 3 stale writes accepted, 0 stale ops refused, two holders at once
// for 1.204 s".
func (d *Damage) Text() string {
	var b strings.Builder
	b.WriteString(d.LostText())
	if d.Tokenless {
		b.WriteString(", stale writes cannot be told (no tokens)")
	} else {
		fmt.Fprintf(&b, ", %d stale %s accepted", d.StaleWritesAccepted, plural(d.StaleWritesAccepted, "write", "writes"))
	}
	fmt.Fprintf(&b, ", %d stale %s refused, two holders at once for %.3f s", d.StaleRefused, plural(d.StaleRefused, "op", "ops"), d.OverlapS)
	return b.String()
}

// LostText is the lost-update figure alone, e.g. "lost 3 of 120
// acknowledged updates (2.5%)" or "lost updates unknown: final read of k0
// missing".
func (d *Damage) LostText() string {
	if d.LostMin == nil {
		why := "no key was touched"
		switch {
		case len(d.Keys) == 1:
			why = d.Keys[0].Note
		case len(d.Keys) > 1:
			why = fmt.Sprintf("%s: %s; no key could be counted", d.Keys[0].Key, d.Keys[0].Note)
		}
		return fmt.Sprintf("lost updates unknown (%s) of %d acknowledged", why, d.Acknowledged)
	}
	s := "lost " + rangeText(*d.LostMin, *d.LostMax) + " of "
	if len(d.Unmeasured) > 0 {
		n := 0
		for _, k := range d.Keys {
			if k.LostMin != nil {
				n += k.Acknowledged
			}
		}
		s += fmt.Sprintf("%d acknowledged updates", n)
	} else {
		s += fmt.Sprintf("%d acknowledged %s", d.Acknowledged, plural(d.Acknowledged, "update", "updates"))
	}
	if d.LostShareMin != nil {
		s += " (" + ShareText(*d.LostShareMin, *d.LostShareMax) + ")"
	}
	if d.UnknownWrites > 0 {
		s += fmt.Sprintf(", %d %s of unknown outcome", d.UnknownWrites, plural(d.UnknownWrites, "write", "writes"))
	}
	if len(d.Unmeasured) > 0 {
		s += fmt.Sprintf("; not counted: %s (%s)", listText(d.Unmeasured, 5), plural(len(d.Unmeasured), "no usable final read", "no usable final reads"))
	}
	return s
}

func rangeText(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// ShareText renders a share or a range of shares as percentages.
func ShareText(lo, hi float64) string {
	p := func(x float64) string {
		s := fmt.Sprintf("%.1f", 100*x)
		return strings.TrimSuffix(s, ".0")
	}
	if p(lo) == p(hi) {
		return p(lo) + "%"
	}
	return p(lo) + "–" + p(hi) + "%"
}

func listText(xs []string, most int) string {
	if len(xs) <= most {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:most], ", ") + fmt.Sprintf(" and %d more", len(xs)-most)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// finalReaders finds each key's final read: a read under a lock by a
// process that never writes and never reads without the lock, invoked
// after every write of its key was invoked. The harness takes the final
// reads after the workload, each key with a new process id above every
// other, under a fresh lock; a workload process always writes after an ok
// locked read, and one that reads without the lock (--read-mix) may never
// write at all, so it is never a candidate however late its reads came.
// Among the candidates the one with the highest process id is the final
// reader. Its read, if any, is returned per key (nil: missing).
func finalReaders(ops []history.Op) (reads map[string]*history.Op, seen map[string]bool) {
	lastWrite := map[string]int64{}
	writes := map[int]bool{} // processes that wrote or read without the lock
	keysOf := map[int]map[string]bool{}
	for i := range ops {
		o := &ops[i]
		if o.F == history.Write || o.LockFree {
			writes[o.Process] = true // not a final reader
		}
		if o.F == history.Write {
			lastWrite[o.Key] = max(lastWrite[o.Key], o.InvokeIndex+1)
		}
		if keysOf[o.Process] == nil {
			keysOf[o.Process] = map[string]bool{}
		}
		keysOf[o.Process][o.Key] = true
	}
	best := map[string]int{} // key -> process
	seen = map[string]bool{}
	reads = map[string]*history.Op{}
	for i := range ops {
		o := &ops[i]
		if writes[o.Process] || len(keysOf[o.Process]) != 1 || o.InvokeIndex < lastWrite[o.Key] {
			continue
		}
		if p, ok := best[o.Key]; ok && p > o.Process {
			continue
		}
		if p, ok := best[o.Key]; !ok || p < o.Process {
			best[o.Key] = o.Process
			delete(reads, o.Key)
		}
		seen[o.Key] = true
		if o.F == history.Read {
			reads[o.Key] = o
		}
	}
	return reads, seen
}

// keyTally is what ComputeDamage gathers of one key in one pass over the
// ops, before the final read and the overlaps are known.
type keyTally struct {
	d        KeyDamage
	okByVal  map[int64]int
	unkByVal map[int64]int
	counter  bool // every write stores prev+1
	admitted []admit
	writes   []*history.Op
}

// add counts one op of the tally's key.
func (a *keyTally) add(o *history.Op) {
	if (o.F == history.Read || o.F == history.Write) && o.Type == history.Fail && o.Error == lockclient.ErrorFenced {
		a.d.StaleRefused++
	}
	if (o.F == history.Read || o.F == history.Write) && o.Type == history.OK && !o.LockFree {
		// A lock-free read presents no token: it admits none.
		a.admitted = append(a.admitted, admit{at: o.Ended(), token: o.Token})
	}
	if o.F != history.Write {
		return
	}
	if o.Prev == nil || o.Value == nil || *o.Value != *o.Prev+1 {
		a.counter = false
	}
	switch o.Type {
	case history.OK:
		a.d.Acknowledged++
		a.writes = append(a.writes, o)
		if o.Value != nil {
			a.okByVal[*o.Value]++
		}
	case history.Info:
		a.d.UnknownWrites++
		if o.Value != nil {
			a.unkByVal[*o.Value]++
		}
	}
}

// ComputeDamage measures the damage in a history's ops (in invocation
// order, as history.Pair returns them). It is pure.
func ComputeDamage(ops []history.Op) Damage {
	byKey := map[string]*keyTally{}
	var keys []string
	var end int64
	tokens := false
	for i := range ops {
		o := &ops[i]
		end = max(end, o.Call, o.Done)
		a := byKey[o.Key]
		if a == nil {
			a = &keyTally{d: KeyDamage{Key: o.Key}, okByVal: map[int64]int{}, unkByVal: map[int64]int{}, counter: true}
			byKey[o.Key] = a
			keys = append(keys, o.Key)
		}
		if o.F == history.Acquire && o.Type == history.OK && o.Token != 0 {
			tokens = true
		}
		a.add(o)
	}
	sort.Strings(keys)

	finals, seen := finalReaders(ops)
	overlaps := map[string][]Overlap{}
	for _, ov := range Overlaps(Beliefs(ops, end)) {
		overlaps[ov.Key] = append(overlaps[ov.Key], ov)
	}

	d := Damage{Tokenless: !tokens && len(ops) > 0}
	var lostMin, lostMax, measuredAck int
	for _, k := range keys {
		a := byKey[k]
		kd := &a.d
		kd.StaleWritesAccepted = staleAccepted(a.admitted, a.writes)
		for _, ov := range overlaps[k] {
			kd.Overlaps++
			kd.OverlapS += float64(ov.End-ov.Start) / 1e9
		}
		setFinal(kd, finals[k], seen[k])
		if kd.Final == FinalOK {
			lostUpdates(kd, a.counter, a.okByVal, a.unkByVal)
		}
		if kd.LostMin != nil {
			d.Measured++
			lostMin += *kd.LostMin
			lostMax += *kd.LostMax
			measuredAck += kd.Acknowledged
		} else {
			d.Unmeasured = append(d.Unmeasured, k)
		}
		d.Acknowledged += kd.Acknowledged
		d.UnknownWrites += kd.UnknownWrites
		d.StaleWritesAccepted += kd.StaleWritesAccepted
		d.StaleRefused += kd.StaleRefused
		d.Overlaps += kd.Overlaps
		d.OverlapS += kd.OverlapS
		d.Keys = append(d.Keys, *kd)
	}
	if d.Measured > 0 {
		d.LostMin, d.LostMax = &lostMin, &lostMax
		if lo, hi, ok := share(&lostMin, &lostMax, measuredAck); ok {
			d.LostShareMin, d.LostShareMax = &lo, &hi
		}
	}
	return d
}

// setFinal records a key's final read fr (nil: none) in Final, FinalValue
// and Note; seen says a final reader was found for the key, so a missing
// read means its lock was not granted rather than that it never came.
func setFinal(kd *KeyDamage, fr *history.Op, seen bool) {
	switch {
	case fr != nil && fr.Type == history.OK && fr.Value != nil:
		kd.Final = FinalOK
		v := *fr.Value
		kd.FinalValue = &v
	case fr != nil:
		kd.Final = FinalUnknown
		kd.Note = "final read did not return a value"
		if fr.Error != "" {
			kd.Note += " (" + fr.Error + ")"
		}
	default:
		kd.Final = FinalMissing
		kd.Note = "final read missing"
		if seen {
			kd.Note += ": its lock was not granted"
		}
	}
}

// lostUpdates fills LostMin and LostMax from the final value, or Note
// when the history breaks the counter's assumptions.
func lostUpdates(kd *KeyDamage, counter bool, okByVal, unkByVal map[int64]int) {
	v := *kd.FinalValue
	switch {
	case !counter:
		kd.Note = "a write did not store the value read plus one: lost updates cannot be counted"
		return
	case v < 0:
		kd.Note = fmt.Sprintf("final value %d is negative: the storage did not start at 0", v)
		return
	}
	// For each value 1..v exactly one applied write is in the final value:
	// an acknowledged one for sure when no unknown write stored that value,
	// possibly one when any acknowledged write did.
	var surviveMin, surviveMax int
	for j := int64(1); j <= v; j++ {
		ok, unk := okByVal[j], unkByVal[j]
		switch {
		case ok == 0 && unk == 0:
			kd.Note = fmt.Sprintf("final value %d includes a step to %d that no acknowledged or unknown write made: a write reported as failed applied, or the storage did not start at 0", v, j)
			return
		case ok > 0 && unk == 0:
			surviveMin++
			surviveMax++
		case ok > 0:
			surviveMax++
		}
	}
	lo, hi := kd.Acknowledged-surviveMax, kd.Acknowledged-surviveMin
	kd.LostMin, kd.LostMax = &lo, &hi
}

// admit is an ok read or write: the storage admitted token at (or before)
// the time its answer came.
type admit struct {
	at    int64
	token uint64
}

// staleAccepted counts the ok writes that returned after an op with a
// higher token had been admitted (had returned). The write took effect
// somewhere in its interval, and a holder frozen inside its write (between
// its lease check and sending it) took effect at the end of it, after the
// newer holder's op; so the end is the time to compare. Such a write always
// overlaps a newer holder's admitted op: its holder had been superseded
// while it wrote. (A write the storage applied just before the newer op
// but whose answer came back after it would count too; that needs the
// same overlap of two holders.)
func staleAccepted(admitted []admit, writes []*history.Op) int {
	if len(admitted) == 0 || len(writes) == 0 {
		return 0
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].at < admitted[j].at })
	best := make([]uint64, len(admitted)) // highest token admitted up to i
	for i, a := range admitted {
		best[i] = a.token
		if i > 0 {
			best[i] = max(best[i], best[i-1])
		}
	}
	n := 0
	for _, w := range writes {
		// the admissions that returned strictly before the write did
		end := w.Ended()
		i := sort.Search(len(admitted), func(i int) bool { return admitted[i].at >= end }) - 1
		if i >= 0 && best[i] > w.Token {
			n++
		}
	}
	return n
}
