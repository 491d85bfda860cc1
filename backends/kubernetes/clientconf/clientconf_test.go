package clientconf

import (
	"strings"
	"testing"
	"time"
)

// The durations keep client-go's 15/10/2 proportions, and at client-go's
// defaults the rate limit is client-go's own.
func TestTimingKeepsClientGoProportions(t *testing.T) {
	if got := TimingFor(15 * time.Second); got != (Timing{15 * time.Second, 10 * time.Second, 2 * time.Second}) {
		t.Errorf("TimingFor(15s) = %+v, want client-go's defaults 15s/10s/2s", got)
	}
	if tm := TimingFor(15 * time.Second); tm.RateScale() != 1 || tm.QPS() != 5 || tm.Burst() != 10 {
		t.Errorf("at client-go's defaults the rate limit is %v/s burst %d, not client-go's 5/s burst 10", tm.QPS(), tm.Burst())
	}
	// RetryPeriod 266 ms: 2 s / 266 ms ≈ 7.52 times as often.
	tm := TimingFor(2 * time.Second)
	if s := tm.RateScale(); s < 7.5 || s > 7.55 || tm.Burst() != 75 {
		t.Errorf("a 2 s lease retries about 7.5 times as often: scale %v, burst %d", s, tm.Burst())
	}
	for _, want := range []string{tm.RenewDeadline.String(), "burst 75", "ReleaseOnCancel"} {
		if !strings.Contains(tm.String(), want) {
			t.Errorf("the report's line %q does not say %q", tm, want)
		}
	}
}

// Process p speaks to API server p mod their count, so consecutive
// processes land on different servers and all of them are used.
func TestClientProcessSpeaksToAPIServerProcessModCount(t *testing.T) {
	eps := []string{"https://n4:6443", "https://n5:6443", "https://n6:6443"}
	for p, want := range map[int]string{0: eps[0], 1: eps[1], 2: eps[2], 3: eps[0], 7: eps[1], 11: eps[2]} {
		if got, err := APIServerFor(eps, p); err != nil || got != want {
			t.Errorf("process %d: %q, %v; want %q", p, got, err, want)
		}
	}
	for p := range 5 {
		if got, err := APIServerFor(eps[:1], p); err != nil || got != eps[0] {
			t.Errorf("one API server, process %d: %q, %v", p, got, err)
		}
	}
	if _, err := APIServerFor(nil, 1); err == nil {
		t.Error("a client with no API server was made")
	}
}

// The secret reads back as it was written, and one missing either part
// is refused with what is missing.
func TestSecretRoundTrips(t *testing.T) {
	s := Secret{Token: "tok", CA: "-----BEGIN CERTIFICATE-----"}
	if got, err := ParseSecret(s.Encode()); err != nil || got != s {
		t.Errorf("ParseSecret(Encode()) = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", `{"token":"t"}`, `{"ca":"c"}`, "not json"} {
		if _, err := ParseSecret(bad); err == nil || !strings.Contains(err.Error(), "service_secret") {
			t.Errorf("ParseSecret(%q): %v", bad, err)
		}
	}
}
