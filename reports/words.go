package reports

import "strings"

// How reports phrase counts and lists in English.

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	if xs[len(xs)-1] == "…" {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
