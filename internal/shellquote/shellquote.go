// Package shellquote writes a command line as a POSIX shell reads it back:
// each argument one word, whatever it holds (spaces, quotes, $, an empty
// string). It exists so that a command fencecheck prints for a user to
// paste (the rerun line, results.json's command) runs exactly what ran.
// It never expands or interprets anything.
package shellquote

import "strings"

// Join quotes each argument and joins them with spaces.
func Join(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// Quote returns s as one shell word: unchanged when it holds only
// characters no shell treats specially, else in single quotes (a single
// quote inside written as '\”).
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, special) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// special reports whether r needs quoting: anything but letters, digits
// and a few punctuation marks no shell gives a meaning to in a word.
func special(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./:,+=@%", r)
}
