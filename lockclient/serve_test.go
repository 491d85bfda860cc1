package lockclient

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// register is a Client over one in-memory value, enough to drive Serve.
type register struct {
	opened  Init
	value   int64
	openErr error
}

func (r *register) Open(_ context.Context, init Init) error             { r.opened = init; return r.openErr }
func (r *register) Acquire(context.Context, string) (uint64, error)     { return 5, nil }
func (r *register) Read(context.Context, string, uint64) (int64, error) { return r.value, nil }
func (r *register) Write(ctx context.Context, _ string, token uint64, _, value int64, checkpoint func(string)) error {
	checkpoint(FailpointWriteChecked)
	if ctx.Err() != nil {
		return Fail(ctx.Err())
	}
	if token < 5 {
		return ErrFenced
	}
	r.value = value
	return nil
}
func (r *register) Release(context.Context, string) error { return errors.New("connection reset") }

func serve(t *testing.T, c Client, lines ...string) ([]map[string]any, error) {
	t.Helper()
	var out strings.Builder
	err := Serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, c)
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("Serve wrote %q: %v", l, err)
		}
		got = append(got, m)
	}
	return got, err
}

const init1 = `{"type":"init","protocol":1,"process":4,"node":"c1","service":{"backend":"redis","endpoints":["redis://n1:6379"]},"lease_ttl_ms":2000,"keys":["k0"],"later":"ignored"}`

func TestServeAnswersEachOp(t *testing.T) {
	r := &register{}
	got, err := serve(t, r, init1,
		`{"id":1,"f":"clock"}`,
		`{"id":2,"f":"acquire","key":"k0","timeout_ms":100}`,
		`{"id":3,"f":"write","key":"k0","token":5,"prev":0,"value":9,"timeout_ms":100,"stop":true}`,
		`{"id":3,"f":"continue"}`,
		`{"id":4,"f":"read","key":"k0","token":5}`,
		`{"id":5,"f":"write","key":"k0","token":4,"value":1}`,
		`{"id":6,"f":"release","key":"k0"}`,
		`{"id":7,"f":"cas","key":"k0"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.opened.Process != 4 || r.opened.Service.Endpoints[0] != "redis://n1:6379" {
		t.Errorf("opened with %+v", r.opened)
	}
	want := []string{"ready", "ok", "ok", "checkpoint", "ok", "ok", "fail", "info", "fail"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i]["type"] != w {
			t.Errorf("line %d: %v, want type %s", i, got[i], w)
		}
	}
	if got[3]["name"] != FailpointWriteChecked || got[5]["value"] != 9.0 || got[6]["error"] != ErrorFenced ||
		got[2]["token"] != 5.0 || got[1]["value"] == nil {
		t.Errorf("answers %v", got)
	}
}

func TestServeRefuses(t *testing.T) {
	got, err := serve(t, &register{}, `{"type":"init","protocol":2}`)
	if err == nil || got[0]["type"] != "refuse" || !strings.Contains(got[0]["error"].(string), "protocol 1, not 2") {
		t.Fatalf("version 2: %v %v", got, err)
	}
	got, err = serve(t, &register{openErr: errors.New("no route to n1")}, init1)
	if err == nil || got[0]["type"] != "refuse" || got[0]["error"] != "no route to n1" {
		t.Fatalf("open error: %v %v", got, err)
	}
}

// stdin ending at the checkpoint gives the write up.
func TestServeCheckpointWithoutContinue(t *testing.T) {
	got, _ := serve(t, &register{}, init1, `{"id":1,"f":"write","key":"k0","token":5,"value":9,"stop":true}`)
	if len(got) != 3 || got[1]["type"] != "checkpoint" || got[2]["type"] != "fail" {
		t.Fatalf("got %v", got)
	}
}
