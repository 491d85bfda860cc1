package main

import (
	"slices"
	"testing"
)

// --endpoints keeps what was given, empty entries included (the harness
// names them), and writes it back as given for the rerun command.
func TestEndpointsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"http://a:2379,http://b:2379"}, []string{"http://a:2379", "http://b:2379"}},
		{[]string{"http://a:2379", "http://b:2379"}, []string{"http://a:2379", "http://b:2379"}},
		{[]string{"http://a:2379,,http://b:2379"}, []string{"http://a:2379", "", "http://b:2379"}},
		{[]string{""}, nil},
	} {
		var v endpointsValue
		for _, a := range tc.args {
			if err := v.Set(a); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(v, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, []string(v), tc.want)
		}
		var again endpointsValue
		again.Set(v.String())
		if len(v) > 0 && !slices.Equal(again, v) {
			t.Errorf("%q: written back as %q, read again as %q", tc.args, v.String(), []string(again))
		}
	}
}
