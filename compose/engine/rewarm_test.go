package engine

import (
	"reflect"
	"testing"
)

// What Rewarm waits for: nothing but the container's own processes, ps
// itself and zombies the init has yet to reap.
func TestSurvivors(t *testing.T) {
	ps := `    1 Ss   /sbin/docker-init -- sleep infinity
    7 S    sleep infinity
   90 Z    [etcd] <defunct>
  120 Sl   /usr/bin/etcd --name n1 --data-dir /var/lib/fencecheck/etcd
  131 S    /fencecheck/check agent
  140 R    ps -e -o pid=,stat=,args=
`
	want := []string{"pid 120 /usr/bin/etcd --name n1 --data-dir /var/lib/fencecheck/etcd", "pid 131 /fencecheck/check agent"}
	if got := survivors(ps); !reflect.DeepEqual(got, want) {
		t.Fatalf("survivors:\n got %q\nwant %q", got, want)
	}
	if got := survivors("    1 Ss   /sbin/docker-init -- sleep infinity\n    7 S    sleep infinity\n"); len(got) != 0 {
		t.Fatalf("a clean node has survivors: %q", got)
	}
}
