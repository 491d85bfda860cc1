package history

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

func slowDecode(b []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&e)
	return e, err
}

// The fast decoder reads exactly what encoding/json reads, or leaves the
// line to it: on every event shape the harness writes, and on lines a
// person might have edited.
func TestFastDecodeAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []Type{Invoke, OK, Fail, Info}
	fs := []string{Acquire, Read, Write, Release}
	fast := 0
	for i := 0; i < 20000; i++ {
		e := Event{Index: rng.Int64N(1 << 40), Time: rng.Int64N(1 << 50), Process: rng.IntN(200), Type: types[rng.IntN(4)], F: fs[rng.IntN(4)], Key: "k" + string(rune('0'+rng.IntN(10)))}
		if rng.IntN(2) == 0 {
			e.Token = rng.Uint64N(1 << 62)
		}
		if rng.IntN(3) == 0 {
			e.Prev, e.Value = Int64(rng.Int64N(1000)-500), Int64(rng.Int64N(1000))
		}
		if rng.IntN(5) == 0 {
			e.Error = []string{"fenced", "timeout", `with "quotes"`, "ünïcode"}[rng.IntN(4)]
		}
		if rng.IntN(4) == 0 {
			e.Call, e.Return = rng.Int64N(1<<50), rng.Int64N(1<<50)
		}
		if rng.IntN(10) == 0 {
			e.Process = NemesisProcess
			e.F, e.Key, e.Token, e.Prev, e.Value, e.Call, e.Return = "pause", "", 0, nil, nil, 0, 0
			if rng.IntN(2) == 0 {
				e.Nodes = []string{"n1", "n2"}
			}
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := e.AppendJSON(nil); err != nil || !bytes.Equal(a, b) {
			t.Fatalf("AppendJSON wrote %s (%v), json.Marshal %s", a, err, b)
		}
		if agree(t, b) {
			fast++
		}
	}
	odd := []string{
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0","token":0}  `,
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0","token":-1}`,
		`{"index":01,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"}`,
		`{"index":1.0,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"}`,
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0","value":null}`,
		`{"index":1,"time":2,"process":"3","type":"invoke","f":"read","key":"k0"}`,
		`{"index":1,"time":2,"type":"invoke","f":"read","key":"k0"}`,
		`{"index":1,"index":2,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"}`,
		`{"Index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"}`,
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k\u0030"}`,
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0","extra":1}`,
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"} trailing`,
		`{"index":1,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"`,
		`{"index":99999999999999999999,"time":2,"process":3,"type":"invoke","f":"read","key":"k0"}`,
		`{"index":1,"time":2,"process":-0,"type":"ok","f":"read","key":"k0","value":-7}`,
		`{"index":1,"time":2,"process":"nemesis","type":"info","f":"pause","value":["n1"]}`,
		`{ "index" : 1 , "time" : 2 , "process" : 3 , "type" : "ok" , "f" : "read" , "key" : "k0" , "value" : 5 }`,
		`{}`, `[]`, `{"index":1,}`, `{,"index":1}`,
	}
	for _, line := range odd {
		agree(t, []byte(line))
	}
	if fast < 15000 {
		t.Fatalf("the fast decoder took only %d of 20000 ordinary events", fast)
	}
}

// agree checks one line and reports whether the fast decoder took it.
func agree(t *testing.T, b []byte) bool {
	t.Helper()
	want, err := slowDecode(b)
	var got Event
	if !decodeFast(b, &got) {
		return false
	}
	if err != nil {
		t.Fatalf("%s: the fast decoder accepted what encoding/json refuses (%v)", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: fast %+v, encoding/json %+v", b, got, want)
	}
	return true
}
