package units

import (
	"strings"
	"testing"
	"time"
)

func TestParseAndFormatBytes(t *testing.T) {
	for in, want := range map[string]int64{"12GiB": 12 << 30, "512MiB": 512 << 20, "1.5G": 3 << 29, "2048": 2048, "4 gb": 4 << 30} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "12XB", "-1GiB"} {
		if _, err := ParseBytes(bad); err == nil || !strings.Contains(err.Error(), "e.g. 512MiB or 12GiB") {
			t.Errorf("ParseBytes(%q): %v", bad, err)
		}
	}
	for n, want := range map[int64]string{12 << 30: "12GiB", 3 << 29: "1.5GiB", 512 << 20: "512MiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := FormatDuration(5 * time.Minute); got != "5m" {
		t.Errorf("FormatDuration(5m) = %q", got)
	}
}
