package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `check report` holds the history to what results.json says the
// servers held at the end: a valid history whose service has since lost
// its lock bucket is invalid again, however often it is regenerated.
func TestReportHoldsTheHistoryToTheStoredAgreement(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats-kv-fenced-all-power-loss-all", "20261207T133448.120Z")
	os.MkdirAll(dir, 0o755)
	hist := `{"index":0,"time":1000000,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2000000,"process":0,"type":"ok","f":"acquire","key":"k0","token":311}
{"index":2,"time":3000000,"process":0,"type":"invoke","f":"write","key":"k0","token":311,"prev":0,"value":1}
{"index":3,"time":4000000,"process":0,"type":"ok","f":"write","key":"k0","token":311,"prev":0,"value":1}
{"index":4,"time":5000000,"process":0,"type":"invoke","f":"release","key":"k0"}
{"index":5,"time":6000000,"process":0,"type":"ok","f":"release","key":"k0"}
{"index":6,"time":7000000,"type":"end"}
`
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(hist), 0o644)
	results := `{"schema":"fencecheck/results/v1","name":"nats-kv-fenced-all-power-loss-all","verdict":"invalid","keys":[],"stats":{},"params":[],` +
		`"started":"2026-12-07T13:34:48.120Z","duration_s":44,"check_s":0,"events":7,` +
		`"agreement":{"members":[{"node":"n1","state":"no stream KV_fencecheck"},{"node":"n2","state":"no stream KV_fencecheck"}],` +
		`"counters":[{"what":"the lock bucket fencecheck (stream KV_fencecheck)","value":0,"gone":"no server that answered holds the stream KV_fencecheck","acknowledged":5}],` +
		`"verdict":"invalid","explanation":"stale words, written again"}}`
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(results), 0o644)
	for range 2 {
		code, out, errOut := runCLI(t, "report", dir)
		if code != 1 || !strings.Contains(out, "INVALID: at the end, the service lost its token counter") || !strings.Contains(out, "though it had acknowledged token 311") {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		var back struct {
			Verdict   string
			Agreement struct {
				Verdict, Explanation string
				Counters             []struct{ Acknowledged uint64 }
			}
		}
		b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
		if err := json.Unmarshal(b, &back); err != nil || back.Verdict != "invalid" || back.Agreement.Verdict != "invalid" ||
			len(back.Agreement.Counters) != 1 || back.Agreement.Counters[0].Acknowledged != 311 {
			t.Errorf("results.json: %v %+v", err, back)
		}
	}
}
