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

// From the user's image, etcd is configured as its official image is:
// one ETCD_* variable per flag the node image's etcd takes, so the image's
// own CMD runs it wherever it keeps its binary.
func TestImageServerEnvMatchesTheFlags(t *testing.T) {
	d := &DB{TestID: "t1", nodes: []string{"n1", "n2", "n3"}}
	cfg := d.config("n2", ImageDataDir)
	want := map[string]string{"name": "n2", "data-dir": ImageDataDir, "initial-cluster": "n1=http://n1:2380,n2=http://n2:2380,n3=http://n3:2380",
		"advertise-client-urls": "http://n2:2379", "initial-cluster-token": "fencecheck-t1"}
	got := map[string]string{}
	for _, kv := range cfg {
		got[kv[0]] = kv[1]
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
