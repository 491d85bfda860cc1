package backends

import "testing"

func TestRelease(t *testing.T) {
	for answer, want := range map[string]string{
		"3.8.0-${mvngit.commit.id}, built on 2024": "3.8.0",
		"15.20 (Debian 15.20-0+deb12u1)":           "15.20",
		" 7.0.15\n":                                "7.0.15",
		"v1.2.0":                                   "v1.2.0",
		"devel":                                    "",
		"":                                         "",
	} {
		if got := Release(answer); got != want {
			t.Errorf("Release(%q) = %q, want %q", answer, got, want)
		}
	}
}

func TestHTTPBody(t *testing.T) {
	body, err := HTTPBody("n1", "/version", "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\n")
	if err != nil || body != "{\"a\":1}\n" {
		t.Errorf("got %q, %v", body, err)
	}
	for _, bad := range []string{"", "HTTP/1.0 404 Not Found\r\n\r\nnope", "garbage"} {
		if b, err := HTTPBody("n1", "/version", bad); err == nil {
			t.Errorf("%q was read as a 200 with body %q", bad, b)
		}
	}
}
