package images

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// unmountUnder lazily unmounts every mount point under dir, deepest first,
// so that removing dir cannot reach into a proc or sys that a failed
// debootstrap left mounted there.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	dir = filepath.Clean(dir)
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, mp := range points {
		syscall.Unmount(mp, syscall.MNT_DETACH)
	}
}

// unescapeMountinfo undoes the octal escapes (\040 for a space and the
// like) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			out = append(out, v)
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}
