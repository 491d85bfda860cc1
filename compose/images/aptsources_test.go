package images

import "testing"

func TestParseMirrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Mirrors
	}{
		{
			name: "deb822 with a snapshot comment",
			files: map[string]string{"/etc/apt/sources.list.d/debian.sources": `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`},
			want: Mirrors{Archive: "http://deb.debian.org/debian", Security: "http://deb.debian.org/debian-security"},
		},
		{
			name: "one-line with options, a local mirror, no security",
			files: map[string]string{"/etc/apt/sources.list": `# comment
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.local/debian/ bookworm main contrib
deb cdrom:[Debian]/ bookworm-security main
`},
			want: Mirrors{Archive: "http://mirror.local/debian"},
		},
		{
			name: "disabled paragraph and other distributions",
			files: map[string]string{
				"/etc/apt/sources.list.d/a.sources": "Enabled: no\nTypes: deb\nURIs: http://off/debian\nSuites: bookworm\n",
				"/etc/apt/sources.list.d/b.list":    "deb https://deb.nodesource.com/node_20.x nodistro main\ndeb http://on/debian bookworm main\n",
			},
			want: Mirrors{Archive: "http://on/debian"},
		},
		{
			name:  "nothing for bookworm",
			files: map[string]string{"/etc/apt/sources.list": "deb http://archive.ubuntu.com/ubuntu noble main\n"},
			want:  Mirrors{Archive: defaultArchive, Security: defaultSecurity},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseMirrors(tc.files); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	if got := unescapeMountinfo(`/tmp/a\040b/proc`); got != "/tmp/a b/proc" {
		t.Errorf("got %q", got)
	}
	if got := unescapeMountinfo("/proc"); got != "/proc" {
		t.Errorf("got %q", got)
	}
}
