package postgres

import "testing"

func TestParseVersion(t *testing.T) {
	answer := "PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit"
	v, err := parseVersion("n1", " "+answer+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "15.20" || v.Answer != answer {
		t.Errorf("got %+v", v)
	}
	for _, bad := range []string{"", "psql: error: connection refused", "PostgreSQL devel"} {
		if v, err := parseVersion("n1", bad); err == nil {
			t.Errorf("%q was read as %+v", bad, v)
		}
	}
}
