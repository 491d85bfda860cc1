package lines

import (
	"errors"
	"reflect"
	"testing"
)

// Lines split across writes come out whole, in order, without their line
// ends; the unfinished one waits for Rest.
func TestSplitterJoinsPieces(t *testing.T) {
	var s Splitter
	var got []string
	each := func(l string) error { got = append(got, l); return nil }
	for _, p := range []string{"one\r\ntw", "o\n", "", "\nthr", "ee\r"} {
		if err := s.Write([]byte(p), each); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"one", "two", ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if rest, ok := s.Rest(); !ok || rest != "three" {
		t.Fatalf("Rest = %q, %v; want \"three\", true", rest, ok)
	}
	if rest, ok := s.Rest(); ok {
		t.Fatalf("a second Rest gave %q", rest)
	}
}

// The first error stops the write; the lines after it stay for the next.
func TestSplitterStopsAtError(t *testing.T) {
	var s Splitter
	boom := errors.New("boom")
	var got []string
	err := s.Write([]byte("a\nb\nc"), func(l string) error {
		got = append(got, l)
		return boom
	})
	if !errors.Is(err, boom) || !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("err %v, lines %q; want boom after \"a\"", err, got)
	}
	got = nil
	s.Write(nil, func(l string) error { got = append(got, l); return nil })
	if rest, _ := s.Rest(); !reflect.DeepEqual(got, []string{"b"}) || rest != "c" {
		t.Fatalf("after the error: lines %q, rest %q; want [b] and c", got, rest)
	}
}
