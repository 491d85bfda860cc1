package images

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Mirrors are the Debian archives the image is built from: the main archive
// (bookworm, bookworm-updates) and the security archive (bookworm-security,
// empty when the host has none). They are taken from the host's own apt
// sources, which are known to be reachable from here.
type Mirrors struct {
	Archive  string
	Security string
}

// Default Debian mirrors, used when the host's apt sources name none.
const (
	defaultArchive  = "http://deb.debian.org/debian"
	defaultSecurity = "http://deb.debian.org/debian-security"
)

// HostMirrors reads /etc/apt/sources.list and /etc/apt/sources.list.d
// (*.list and *.sources) and returns the mirrors they name for bookworm.
func HostMirrors() Mirrors {
	files := map[string]string{}
	read := func(path string) {
		if b, err := os.ReadFile(path); err == nil {
			files[path] = string(b)
		}
	}
	read("/etc/apt/sources.list")
	for _, pattern := range []string{"*.list", "*.sources"} {
		matches, _ := filepath.Glob(filepath.Join("/etc/apt/sources.list.d", pattern))
		for _, m := range matches {
			read(m)
		}
	}
	return parseMirrors(files)
}

// parseMirrors finds the bookworm and bookworm-security archives in apt
// source files (file name to content), one-line (.list) or deb822
// (.sources) style. Files are read in name order; the first match wins.
func parseMirrors(files map[string]string) Mirrors {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)

	var m Mirrors
	found := false
	consider := func(types, uris, suites []string) {
		if !slices.Contains(types, "deb") {
			return
		}
		for _, uri := range uris {
			uri = strings.TrimSuffix(uri, "/")
			if !strings.HasPrefix(uri, "http://") && !strings.HasPrefix(uri, "https://") {
				continue // cdrom:, file: and the like cannot be reached from a container
			}
			if m.Archive == "" && slices.Contains(suites, "bookworm") {
				m.Archive = uri
				found = true
			}
			if m.Security == "" && slices.Contains(suites, "bookworm-security") {
				m.Security = uri
				found = true
			}
		}
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".sources") {
			for _, para := range deb822Paragraphs(files[name]) {
				if strings.EqualFold(para["enabled"], "no") {
					continue
				}
				consider(strings.Fields(para["types"]), strings.Fields(para["uris"]), strings.Fields(para["suites"]))
			}
			continue
		}
		for _, line := range strings.Split(files[name], "\n") {
			typ, uri, suite, ok := oneLineSource(line)
			if ok {
				consider([]string{typ}, []string{uri}, []string{suite})
			}
		}
	}
	if !found {
		return Mirrors{Archive: defaultArchive, Security: defaultSecurity}
	}
	if m.Archive == "" {
		m.Archive = defaultArchive
	}
	return m
}

// oneLineSource parses "deb [options] uri suite components...".
func oneLineSource(line string) (typ, uri, suite string, ok bool) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) < 3 {
		return "", "", "", false
	}
	typ, f = f[0], f[1:]
	if strings.HasPrefix(f[0], "[") {
		for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
			f = f[1:]
		}
		if len(f) == 0 {
			return "", "", "", false
		}
		f = f[1:]
	}
	if len(f) < 2 {
		return "", "", "", false
	}
	return typ, f[0], f[1], true
}

// deb822Paragraphs splits a deb822 file into paragraphs of lower-cased
// field names to values; continuation lines are joined with spaces.
func deb822Paragraphs(text string) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	last := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur, last = map[string]string{}, ""
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				cur[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			cur[last] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
