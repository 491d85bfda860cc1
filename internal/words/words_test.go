package words

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "key", "1 key"}, {0, "key", "0 keys"}, {2, "time", "2 times"}, {1, "run", "1 run"},
		{3, "process", "3 processes"}, {1, "process", "1 process"}, {5, "server node", "5 server nodes"}, {2, "match", "2 matches"},
	} {
		if got := Plural(c.n, c.noun); got != c.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
	if got := PluralOf(2, "child", "children"); got != "2 children" {
		t.Errorf("PluralOf = %q", got)
	}
}

func TestList(t *testing.T) {
	for _, c := range []struct {
		in      []string
		and, or string
	}{
		{nil, "", ""}, {[]string{"n1"}, "n1", "n1"}, {[]string{"n1", "n2"}, "n1 and n2", "n1 or n2"},
		{[]string{"n1", "n2", "n3"}, "n1, n2 and n3", "n1, n2 or n3"},
	} {
		if got := List(c.in); got != c.and {
			t.Errorf("List(%q) = %q, want %q", c.in, got, c.and)
		}
		if got := OrList(c.in); got != c.or {
			t.Errorf("OrList(%q) = %q, want %q", c.in, got, c.or)
		}
	}
}
