// Package words phrases counts and lists in the English a user reads:
// "1 key", "2 keys", "n1, n2 and n3". Messages use it in place of Go's own
// formatting (%v of a slice prints "[n1 n2]", "%d keys" prints "1 keys").
// It also cuts a tool's long output to the end a message quotes (Tail).
// It knows English and nothing of fencecheck.
package words

import (
	"fmt"
	"strings"
)

// Plural is n and the noun, the noun in the plural unless n is 1: "1
// key", "0 keys", "2 processes". A noun whose plural is not made with -s
// or -es (after s, x, z, ch, sh) goes through PluralOf.
func Plural(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, Noun(n, noun))
}

// PluralOf is Plural with the plural spelled out: PluralOf(2, "child",
// "children").
func PluralOf(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Noun is the noun alone, in the plural unless n is 1. In a phrase of
// several words the last is the one made plural ("server node" → "server
// nodes").
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	for _, end := range []string{"s", "x", "z", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			return noun + "es"
		}
	}
	return noun + "s"
}

// List joins items as a sentence does: "a", "a and b", "a, b and c".
func List(items []string) string { return join(items, "and") }

// OrList joins items as alternatives: "a, b or c".
func OrList(items []string) string { return join(items, "or") }

func join(items []string, word string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + word + " " + items[len(items)-1]
}

// Tail returns at most the last n bytes of s, "..." in front when it cut:
// the end of a tool's output, where its error usually stands, for a
// message to quote.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
