package etcd

import "testing"

// etcd's /version answer is kept verbatim; the version is etcdserver, not
// the cluster's (lower) version.
func TestParseVersion(t *testing.T) {
	v, err := parseVersion("n1", `{"etcdserver":"3.6.16","etcdcluster":"3.6.0"}`+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "3.6.16" || v.Answer != `{"etcdserver":"3.6.16","etcdcluster":"3.6.0"}` {
		t.Errorf("got %+v", v)
	}
	for _, bad := range []string{"", "404 page not found", `{"etcdcluster":"3.4.0"}`} {
		if v, err := parseVersion("n1", bad); err == nil {
			t.Errorf("%q was read as %+v", bad, v)
		}
	}
}
