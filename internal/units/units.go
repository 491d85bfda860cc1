// Package units writes and reads durations and sizes the way the flags
// take them (--check-timeout 5m, --check-memory 12GiB), so that a message
// can name a value the user can give back.
package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatDuration writes d the way a flag takes it, without zero units:
// 5m, 1h30m, 90s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatBytes writes n the way --check-memory takes it: 12GiB, 1.5GiB,
// 512MiB.
func FormatBytes(n int64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
	)
	switch {
	case n >= gib && n%gib == 0:
		return strconv.FormatInt(n/gib, 10) + "GiB"
	case n >= gib:
		return strconv.FormatFloat(float64(n*10/gib)/10, 'f', -1, 64) + "GiB"
	case n >= mib:
		return strconv.FormatInt(n/mib, 10) + "MiB"
	case n >= kib:
		return strconv.FormatInt(n/kib, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// ParseBytes reads a size as --check-memory takes it: a number with an
// optional unit B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB, also powers of
// 1024; K, M, G, T alike).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
		"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 {
		return 0, fmt.Errorf("%q is not a size: give a number and a unit, e.g. 512MiB or 12GiB", s)
	}
	n := v * mult
	if n > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}
