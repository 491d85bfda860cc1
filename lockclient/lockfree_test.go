package lockclient

import (
	"context"
	"strings"
	"testing"
)

// lockFreeRegister also reads without the lock.
type lockFreeRegister struct{ register }

func (r *lockFreeRegister) ReadLockFree(context.Context, string) (int64, error) { return r.value, nil }

// read-lock-free goes to a client that can read without the lock; any
// other client answers it fail (certainly not done), never info.
func TestServeReadLockFree(t *testing.T) {
	got, err := serve(t, &lockFreeRegister{register{value: 7}}, init1, `{"id":1,"f":"read-lock-free","key":"k0","timeout_ms":100}`)
	if err != nil {
		t.Fatal(err)
	}
	if a := got[1]; a["type"] != TypeOK || a["value"] != float64(7) || a["id"] != float64(1) {
		t.Fatalf("answer %v, want ok 7", a)
	}
	got, err = serve(t, &register{value: 7}, init1, `{"id":1,"f":"read-lock-free","key":"k0"}`)
	if err != nil {
		t.Fatal(err)
	}
	if a := got[1]; a["type"] != TypeFail || !strings.Contains(a["error"].(string), "does not read without the lock") {
		t.Fatalf("answer %v, want fail naming the missing lock-free read", a)
	}
}
