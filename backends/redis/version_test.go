package redis

import "testing"

func TestParseInfoVersion(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\nos:Linux\r\n"
	v, err := parseInfoVersion("n1", info)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "7.0.15" || v.Answer != "7.0.15" {
		t.Errorf("got %+v", v)
	}
	if v, err := parseInfoVersion("n1", "LOADING Redis is loading the dataset in memory\n"); err == nil {
		t.Errorf("an error reply was read as %+v", v)
	}
}
