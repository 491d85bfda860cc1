package images

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The failpoints of a release are its markers in the packages etcd's
// failpoint builds name: labels, test files and other packages are not
// failpoints, and a package with a marker gofail v0.2.0 cannot rewrite is
// left out whole, as etcd's own lists leave it out; so is a package with
// no failpoint (a label alone).
func TestReadFailpoints(t *testing.T) {
	fsys := fstest.MapFS{
		"etcdserver/raft.go":                {Data: []byte("package etcdserver\n\tif x {\n\t\t// gofail: var raftBeforeSave struct{}\n\t}\n\t// gofail: var raftAfterSave struct{}\n")},
		"etcdserver/raft_test.go":           {Data: []byte("package etcdserver\n// gofail: var onlyInTests struct{}\n")},
		"mvcc/backend/backend.go":           {Data: []byte("package backend\n\t// gofail: var defragBeforeCopy struct{}\n\t// gofail: var defragdbFail string\n\t// return errors.New(defragdbFail)\n")},
		"etcdserver/api/rafthttp/stream.go": {Data: []byte("package rafthttp\n\t// gofail: labelRaftDropHeartbeat:\n\t\t// gofail-go: var raftDropHeartbeat struct{}\n")},
		"etcdserver/api/snap/db.go":         {Data: []byte("package snap\n\t// gofail: var notInTheLists struct{}\n")},
		"lease/lessor.go":                   {Data: []byte("package lease\n\t// gofail: labelOnly:\n")},
	}
	pkgs, fps, err := readFailpoints(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(pkgs, " "), "etcdserver mvcc/backend"; got != want {
		t.Errorf("packages %q, want %q", got, want)
	}
	var names []string
	for _, f := range fps {
		names = append(names, f.Name+":"+f.Type+"@"+f.Package)
	}
	if got, want := strings.Join(names, " "), "defragBeforeCopy:struct{}@mvcc/backend defragdbFail:string@mvcc/backend raftAfterSave:struct{}@etcdserver raftBeforeSave:struct{}@etcdserver"; got != want {
		t.Errorf("failpoints %q, want %q", got, want)
	}
}

// Every series build with a wrapper module and every exact release has a
// failpoint build, each naming the server module's release it copies.
func TestEtcdFailpointVersionsNameTheirServerModule(t *testing.T) {
	vs := EtcdFailpointVersions()
	if len(vs) != len(EtcdModuleVersions()) {
		t.Errorf("failpoint builds for %v, want every wrapper module's release %v", vs, EtcdModuleVersions())
	}
	for _, v := range vs {
		m, err := etcdFailpointModule(v)
		if err != nil {
			t.Fatal(err)
		}
		if mv := m.server; !strings.HasPrefix(mv, "v"+v+".") || m.tidy {
			t.Errorf("etcd %s's wrapper requires %s %s", v, etcdServerModule, mv)
		}
	}
	if HasEtcdFailpointBuild("3.4") == nil || HasEtcdFailpointBuild("3.4.23") == nil || HasEtcdFailpointBuild("4.0") == nil {
		t.Error("3.4 (Debian's) or an unknown series has a failpoint build")
	}
	// An exact release's failpoint build starts from the module its
	// plain build generates, completed by go mod tidy.
	m, err := etcdFailpointModule("3.5.4")
	if err != nil || m.server != "v3.5.4" || !m.tidy || !strings.Contains(m.files["go.mod"], etcdServerModule+" v3.5.4") || m.files["main.go"] == "" {
		t.Errorf("3.5.4: %+v, %v", m, err)
	}
}

func TestServerModuleVersion(t *testing.T) {
	for gomod, want := range map[string]string{
		"module x\n\nrequire go.etcd.io/etcd/server/v3 v3.5.4\n":                      "v3.5.4",
		"module x\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.6.16 // indirect\n)\n": "v3.6.16",
	} {
		got, err := serverModuleVersion(gomod)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", gomod, got, err, want)
		}
	}
	if _, err := serverModuleVersion("module x\n\nrequire go.etcd.io/etcd/client/v3 v3.5.4\n"); err == nil {
		t.Error("a go.mod without the server module named a release")
	}
}

// The failpoint build is cached under a name of its own, never the plain
// binary's.
func TestEtcdFailpointCachePathIsItsOwn(t *testing.T) {
	m, err := etcdFailpointModule("3.5")
	if err != nil {
		t.Fatal(err)
	}
	fp, plain := etcdFailpointCachePath("3.5", m.files, "amd64"), etcdCachePath("3.5", "amd64")
	if fp == "" || plain == "" {
		t.Skip("no user cache directory")
	}
	if fp == plain || !strings.Contains(fp, EtcdFailpointBinaryName("3.5")) {
		t.Errorf("failpoint build cached at %s, plain at %s", fp, plain)
	}
}
