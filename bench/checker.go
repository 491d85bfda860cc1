package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/history/simulate"
	"github.com/fencecheck/fencecheck/models"
)

// checkerCase is one synthetic history to check.
type checkerCase struct {
	name    string
	synth   simulate.Synthetic
	goal    time.Duration
	memGoal int64 // bytes of peak RSS; 0: none
	want    models.Verdict
	// degrades explains a case whose time is measured rather than held
	// to the goal: where the search is exponential by nature.
	degrades string
	plain    bool // also check with porcupine's plain register model
}

var checkerCases = []checkerCase{
	{name: "check 100k ops, 10 keys, 10 clients, valid", synth: simulate.Synthetic{Seed: 1, Ops: 100_000, Keys: 10, Clients: 10, InfoRate: 0.002, PauseRate: 0.01, Fenced: true}, goal: 5 * time.Second, want: models.Valid, plain: true},
	{name: "check 100k ops, 10 keys, 10 clients, invalid", synth: simulate.Synthetic{Seed: 2, Ops: 100_000, Keys: 10, Clients: 10, InfoRate: 0.002, PauseRate: 0.01}, goal: 5 * time.Second, want: models.Invalid},
	{name: "check 1M ops, 10 keys, 10 clients, valid", synth: simulate.Synthetic{Seed: 3, Ops: 1_000_000, Keys: 10, Clients: 10, InfoRate: 0.002, PauseRate: 0.01, Fenced: true}, goal: 60 * time.Second, memGoal: 2 << 30, want: models.Valid},
	{name: "check 1M ops, 10 keys, 10 clients, invalid", synth: simulate.Synthetic{Seed: 4, Ops: 1_000_000, Keys: 10, Clients: 10, InfoRate: 0.002, PauseRate: 0.01}, goal: 60 * time.Second, memGoal: 2 << 30, want: models.Invalid},
	{name: "check 5k ops, 1 key, 20 clients, 0.2% info", synth: simulate.Synthetic{Seed: 5, Ops: 5_000, Keys: 1, Clients: 20, InfoRate: 0.002, PauseRate: 0.01, Fenced: true}, goal: 5 * time.Second, want: models.Valid},
	{name: "check 5k ops, 1 key, 20 clients, 2% info", synth: simulate.Synthetic{Seed: 5, Ops: 5_000, Keys: 1, Clients: 20, InfoRate: 0.02, PauseRate: 0.01, Fenced: true}, goal: 5 * time.Second, want: models.Valid},
	{name: "check 20k ops, 1 key, 20 clients, 2% info", synth: simulate.Synthetic{Seed: 6, Ops: 20_000, Keys: 1, Clients: 20, InfoRate: 0.02, PauseRate: 0.01, Fenced: true}, goal: 5 * time.Second, want: models.Valid},
	{name: "check 20k ops, 1 key, 20 clients, 2% info, invalid", synth: simulate.Synthetic{Seed: 7, Ops: 20_000, Keys: 1, Clients: 20, InfoRate: 0.02, PauseRate: 0.01}, goal: 5 * time.Second, want: models.Invalid},
	{name: "check 100k ops, 1 key, 20 clients, 2% info", synth: simulate.Synthetic{Seed: 8, Ops: 100_000, Keys: 1, Clients: 20, InfoRate: 0.02, PauseRate: 0.01, Fenced: true}, goal: 5 * time.Second, want: models.Valid},
	{name: "check 100k ops, 1 key, 50 clients, 5% info", synth: simulate.Synthetic{Seed: 10, Ops: 100_000, Keys: 1, Clients: 50, InfoRate: 0.05, PauseRate: 0.05, Fenced: true}, goal: 5 * time.Second, want: models.Valid},
	{name: "check 20k ops, 1 key, 20 clients, 2% info, no tokens", synth: simulate.Synthetic{Seed: 6, Ops: 20_000, Keys: 1, Clients: 20, InfoRate: 0.02, Fenced: true, NoTokens: true}, goal: 60 * time.Second, want: models.Valid, degrades: infoCost},
}

// infoCost is where a hot key can still degrade. The grants are decided
// without a search (by token order), and an op whose outcome is unknown is
// bounded by the first admitted op with a higher token; a recipe without
// tokens gives no such bound, so each unknown op stays concurrent with every
// later op and the search may place it anywhere after its call.
const infoCost = "without tokens an unknown write stays open to the end: it costs where the storage holds the value it would replace"

// runCheckerCase checks one case in a child process, so its peak memory
// is its own, and returns the rows.
func runCheckerCase(i int) []row {
	c := checkerCases[i]
	self, _ := os.Executable()
	cmd := exec.Command(self, "--checker-case", strconv.Itoa(i))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return []row{{name: c.name, value: -1, unit: "s", goal: fmt.Sprintf("< %s", c.goal), note: "failed: " + err.Error()}}
	}
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss * 1024
	}
	// The child prints: seconds verdict ops plainSeconds plainVerdict
	f := strings.Fields(string(out))
	secs, _ := strconv.ParseFloat(f[0], 64)
	verdict := f[1]
	rows := []row{{
		name: c.name, value: secs, unit: "s", goal: fmt.Sprintf("< %s, %s", c.goal, c.want),
		pass: secs < c.goal.Seconds() && verdict == string(c.want),
		note: fmt.Sprintf("verdict %s, %s ops", verdict, f[2]),
	}}
	if c.degrades != "" {
		rows[0].note += "; " + c.degrades
	}
	mem := row{name: c.name + ": peak memory", value: float64(maxRSS) / (1 << 20), unit: "MiB", pass: true}
	if c.memGoal > 0 {
		mem.goal = fmt.Sprintf("< %d MiB", c.memGoal>>20)
		mem.pass = maxRSS < c.memGoal
	}
	rows = append(rows, mem)
	if c.plain && len(f) >= 5 {
		plain, _ := strconv.ParseFloat(f[3], 64)
		rows = append(rows, row{name: "fenced model ÷ plain register model, same history", value: secs / plain, unit: "×",
			goal: "measured", pass: true, note: fmt.Sprintf("plain register %.2f s (%s)", plain, f[4])})
	}
	return rows
}

// checkerChild is the child's side of runCheckerCase.
func checkerChild(i int) {
	c := checkerCases[i]
	ops := c.synth.Generate()
	start := time.Now()
	res := models.Check(context.Background(), ops, models.Options{Timeout: 2 * c.goal, VisualizeMaxOps: 1})
	secs := time.Since(start).Seconds()
	fmt.Printf("%.3f %s %d", secs, res.Verdict, len(ops))
	if c.plain {
		start := time.Now()
		r := porcupine.CheckOperationsTimeout(plainRegister(), plainOps(ops), 2*c.goal)
		fmt.Printf(" %.3f %s", time.Since(start).Seconds(), r)
	}
	fmt.Println()
}

// plainRegister is porcupine's textbook register, partitioned by key: a
// read returns the last write; tokens ignored. It is the yardstick for
// what the fenced model costs on top.
type plainInput struct {
	key   string
	write bool
	value int64
	info  bool
}

func plainRegister() porcupine.Model {
	type in = plainInput
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			m := map[string][]porcupine.Operation{}
			var keys []string
			for _, o := range h {
				k := o.Input.(in).key
				if _, ok := m[k]; !ok {
					keys = append(keys, k)
				}
				m[k] = append(m[k], o)
			}
			var out [][]porcupine.Operation
			for _, k := range keys {
				out = append(out, m[k])
			}
			return out
		},
		Init: func() interface{} { return int64(0) },
		Step: func(st, input, output interface{}) (bool, interface{}) {
			s := st.(int64)
			i := input.(in)
			if i.write {
				return true, i.value
			}
			if i.info {
				return true, s
			}
			return output.(int64) == s, s
		},
	}
}

func plainOps(ops []history.Op) []porcupine.Operation {
	type in = plainInput
	var out []porcupine.Operation
	for _, o := range ops {
		if (o.F != history.Read && o.F != history.Write) || o.Type == history.Fail {
			continue
		}
		i := in{key: o.Key, write: o.F == history.Write, info: o.Type == history.Info}
		var output interface{} = int64(0)
		if i.write {
			i.value = *o.Value
		} else if o.Value != nil {
			output = *o.Value
		}
		out = append(out, porcupine.Operation{ClientId: o.Process, Input: i, Output: output, Call: o.Call, Return: o.Return})
	}
	return out
}
