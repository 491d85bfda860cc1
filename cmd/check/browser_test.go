package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/models"
)

// chromium finds a headless-capable Chromium. Without one the browser
// tests skip — except in CI (CI=true), where they fail.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but no Chromium is installed (apt-get install chromium): the report tests need a browser")
	}
	t.Skip("no Chromium on PATH; install it (apt-get install chromium) to run the browser tests")
	return ""
}

// browserTab is one browser tab and what it reported.
type browserTab struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

func (b *browserTab) report(format string, args ...any) {
	b.mu.Lock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

// errors returns the console errors, exceptions and dialogs seen so far.
func (b *browserTab) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// newTab starts headless Chromium and records every console error,
// uncaught exception, failed load and dialog of the pages it opens.
func newTab(t *testing.T) *browserTab {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browserTab{}
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithListener(func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.report("console.%s: %s", ev.Type, strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			b.report("uncaught exception: %s", msg)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				b.report("console error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			b.report("a %s dialog opened: %q", ev.Type, ev.Message)
			go chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	}))
	b.ctx = ctx
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first call starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return b
}

// timeout bounds one browser action.
func (b *browserTab) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, time.Minute)
}

// open loads url, waits for the page and for it to settle.
func (b *browserTab) open(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
}

// eval runs a JavaScript expression and decodes its JSON value into out.
func (b *browserTab) eval(t *testing.T, expr string, out any) {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string]("JSON.stringify("+expr+")"))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}

// screenshot saves a full-page PNG and logs where.
func (b *browserTab) screenshot(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := b.timeout()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// browserRuns are a real invalid and a real valid memory run, made once
// for the browser tests in the kept store.
var browserRuns struct {
	once             sync.Once
	store            string
	invalid, valid   string
	invalidV, validV models.Verdict
	err              error
}

// keptStore is the store the browser tests write into and keep, so the
// screenshots outlive the test: $FENCECHECK_TEST_STORE, else a new
// temporary directory (one per test binary).
var keptStore = sync.OnceValues(func() (string, error) {
	if s := os.Getenv("FENCECHECK_TEST_STORE"); s != "" {
		return s, os.MkdirAll(s, 0o755)
	}
	return os.MkdirTemp("", "fencecheck-browser-")
})

func memoryRuns(t *testing.T) (store, invalid, valid string) {
	t.Helper()
	chromium(t) // skip before spending seconds on runs
	r := &browserRuns
	r.once.Do(func() {
		r.store, r.err = keptStore()
		if r.err != nil {
			return
		}
		cfg := func(name, fencing, nemesis string) harness.Config {
			return harness.Config{
				Backend: "memory", Fencing: fencing, Nemesis: []string{nemesis}, Clients: 5, Keys: 1, Seed: 7,
				TimeLimit: 3 * time.Second, LeaseTTL: 200 * time.Millisecond, Work: 5 * time.Millisecond,
				NemesisInterval: 400 * time.Millisecond, CheckTimeout: time.Minute, Store: r.store, Name: name,
			}
		}
		var wg sync.WaitGroup
		var errs [2]error
		run := func(i int, c harness.Config, dir *string, v *models.Verdict) {
			defer wg.Done()
			test, err := harness.Resolve(c)
			if err == nil {
				test, err = test.WithOutputs(harness.Outputs{Command: fmt.Sprintf("check --backend memory --fencing %s --nemesis %s --time-limit 3s --lease-ttl 200ms --nemesis-interval 400ms --seed 7", c.Fencing, c.Nemesis[0])})
			}
			if err != nil {
				errs[i] = err
				return
			}
			out, err := harness.RunTest(harness.Signals{Stop: context.Background(), Abort: context.Background()}, test, io.Discard)
			if err != nil {
				errs[i] = err
				return
			}
			*dir, *v = out.Dir, out.Result.Verdict
		}
		wg.Add(2)
		go run(0, cfg("memory-unfenced-pause-holder", "none", "pause-holder"), &r.invalid, &r.invalidV)
		go run(1, cfg("memory-fenced-pause", "all", "pause"), &r.valid, &r.validV)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			r.err = fmt.Errorf("memory runs: %v; %v", errs[0], errs[1])
		}
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.invalidV != models.Invalid || r.validV != models.Valid {
		t.Fatalf("the runs came out %s and %s, want invalid and valid", r.invalidV, r.validV)
	}
	return r.store, r.invalid, r.valid
}

type reportPage struct {
	Verdict, Explanation, Command    string
	Story, Culprit, Takeover, Faults int
	Timelines, Ops, Beliefs          int
	Overlaps, FaultShades            int
	LatencyMarks, LatencyW           int
	RateLines, ThroughputW           int
	Counts, Params, Scripts, Handler int
	Width                            int
	Servers                          string
}

const reportProbe = `(() => {
  const q = s => document.querySelectorAll(s).length;
  const w = s => { const e = document.querySelector(s); return e ? Math.round(e.getBoundingClientRect().width) : 0; };
  const t = id => { const e = document.getElementById(id); return e ? e.textContent.trim() : ""; };
  let handlers = 0;
  for (const e of document.querySelectorAll('*')) for (const a of e.attributes) if (a.name.startsWith('on')) handlers++;
  return {
    Verdict: t('verdict'), Explanation: t('explanation'), Command: t('command'),
    Story: q('#stories ol.story li'), Culprit: q('#stories li.culprit'), Takeover: q('#stories li.takeover, #stories li.stale'), Faults: q('#stories li.fault'),
    Timelines: q('#timelines svg.timeline'), Ops: q('#timeline svg rect.op, #timeline svg rect.run'), Beliefs: q('#timelines rect.belief'),
    Overlaps: q('#timelines rect.overlap'), FaultShades: q('#timeline rect.fault'),
    LatencyMarks: q('#latency svg circle, #latency svg path'), LatencyW: w('#latency svg'),
    RateLines: q('#throughput svg polyline'), ThroughputW: w('#throughput svg'),
    Counts: q('#counts tr'), Params: q('#params tr'), Scripts: q('script'), Handler: handlers,
    Width: document.documentElement.scrollWidth, Servers: t('servers'),
  };
})()`

// The reports of a real invalid and a real valid run open in Chromium
// without a console error and show the verdict, the story, the timeline
// and the plots.
func TestReportsInChromium(t *testing.T) {
	_, invalid, valid := memoryRuns(t)
	tab := newTab(t)
	for _, c := range []struct {
		dir, verdict string
	}{{invalid, "INVALID"}, {valid, "VALID"}} {
		tab.open(t, "file://"+filepath.Join(c.dir, "report.html"))
		var p reportPage
		tab.eval(t, reportProbe, &p)
		t.Logf("%s: %+v", c.verdict, p)
		if p.Verdict != c.verdict {
			t.Errorf("#verdict says %q, want %q", p.Verdict, c.verdict)
		}
		if !strings.Contains(p.Command, "--seed 7") {
			t.Errorf("#command %q does not give the rerun command with its seed", p.Command)
		}
		if p.Timelines == 0 || p.Ops == 0 || p.Beliefs == 0 || p.FaultShades == 0 {
			t.Errorf("the timeline lacks ops, lease beliefs or fault shading: %+v", p)
		}
		if p.LatencyMarks < 100 || p.LatencyW < 800 || p.RateLines == 0 || p.ThroughputW < 800 {
			t.Errorf("the latency or throughput plot is missing or empty: %+v", p)
		}
		if !strings.HasPrefix(p.Servers, "servers: fencecheck ") {
			t.Errorf("#servers %q does not say what the lock service said it is", p.Servers)
		}
		if p.Counts < 5 || p.Params < 10 {
			t.Errorf("counts or parameters missing: %+v", p)
		}
		if p.Scripts != 0 || p.Handler != 0 {
			t.Errorf("the report runs script: %d scripts, %d handlers", p.Scripts, p.Handler)
		}
		if c.verdict == "INVALID" {
			if p.Story < 4 || p.Culprit != 1 || p.Takeover == 0 || p.Faults == 0 || p.Overlaps == 0 || p.Timelines < 2 {
				t.Errorf("the invalid report does not tell the anomaly: %+v", p)
			}
			if !strings.Contains(p.Explanation, "stale") {
				t.Errorf("#explanation %q", p.Explanation)
			}
		} else if p.Story != 0 {
			t.Errorf("a valid report tells a story: %+v", p)
		}
		tab.screenshot(t, filepath.Join(c.dir, "report.png"))
	}
	if errs := tab.errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// Hostile strings from the history and the old results.json, through
// `check report`, render as text in Chromium: no element is injected and
// no script runs.
func TestHostileReportInChromium(t *testing.T) {
	chromium(t)
	store, err := keptStore()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(store, "hostile", "20260102T030405.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>\"'&`
	key := "k" + evil + "\xff\xfe"
	lines := []string{
		`{"index":0,"time":1000000,"process":0,"type":"invoke","f":"acquire","key":"` + key + `"}`,
		`{"index":1,"time":2000000,"process":0,"type":"ok","f":"acquire","key":"` + key + `","token":1}`,
		`{"index":2,"time":2500000,"process":"nemesis","type":"invoke","f":"pause` + evil + `","value":["c1` + evil + `"]}`,
		`{"index":3,"time":3000000,"process":0,"type":"invoke","f":"read","key":"` + key + `","token":1}`,
		`{"index":4,"time":4000000,"process":0,"type":"ok","f":"read","key":"` + key + `","token":1,"value":0}`,
		`{"index":5,"time":5000000,"process":1,"type":"invoke","f":"acquire","key":"` + key + `"}`,
		`{"index":6,"time":6000000,"process":1,"type":"ok","f":"acquire","key":"` + key + `","token":2}`,
		`{"index":7,"time":7000000,"process":1,"type":"invoke","f":"write","key":"` + key + `","token":2,"prev":0,"value":1}`,
		`{"index":8,"time":8000000,"process":1,"type":"ok","f":"write","key":"` + key + `","token":2,"prev":0,"value":1}`,
		`{"index":9,"time":9000000,"process":0,"type":"invoke","f":"write","key":"` + key + `","token":1,"prev":0,"value":1}`,
		`{"index":10,"time":10000000,"process":0,"type":"ok","f":"write","key":"` + key + `","token":1,"prev":0,"value":1}`,
		`{"index":11,"time":11000000,"process":"nemesis","type":"info","f":"pause` + evil + `","value":["c1` + evil + `"],"error":"` + evil + `"}`,
		`{"index":12,"time":12000000,"process":1,"type":"invoke","f":"release","key":"` + key + `","token":2}`,
		`{"index":13,"time":13000000,"process":1,"type":"fail","f":"release","key":"` + key + `","token":2,"error":"` + evil + `"}`,
	}
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	old := fmt.Sprintf(`{"schema":"fencecheck/results/v1","name":%q,"verdict":"valid","keys":[],"stats":{},"params":[{"name":"clients","value":"2"},{"name":%q,"value":%q}],"command":%q,"started":"2026-01-02T03:04:05.000Z","duration_s":1,"check_s":0,"events":14,"error":%q}`,
		"name"+evil, "param"+evil, "value"+evil, "check --name '"+evil+"'", "error"+evil)
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(old), 0o644)
	code, out, errOut := runCLI(t, "report", dir)
	if code != 1 {
		t.Fatalf("check report: exit %d, want 1 (invalid)\n%s%s", code, out, errOut)
	}
	tab := newTab(t)
	tab.open(t, "file://"+filepath.Join(dir, "report.html"))
	var p struct {
		Scripts, Imgs, Handlers, Story int
		Text                           string
	}
	tab.eval(t, `(() => { let h = 0; for (const e of document.querySelectorAll('*')) for (const a of e.attributes) if (a.name.startsWith('on')) h++;
	  return {Scripts: document.querySelectorAll('script').length, Imgs: document.querySelectorAll('img').length, Handlers: h,
	    Story: document.querySelectorAll('#stories li').length, Text: document.body.innerText}; })()`, &p)
	if p.Scripts != 0 || p.Imgs != 0 || p.Handlers != 0 {
		t.Errorf("hostile strings became elements: %d scripts, %d images, %d handlers", p.Scripts, p.Imgs, p.Handlers)
	}
	for _, want := range []string{"name<script>alert(1)</script>", "param<script>", "value<script>", "error<script>", "k<script>alert(1)</script><img src=x onerror=alert(2)>"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
	if p.Story == 0 {
		t.Error("no story for the hostile key")
	}
	tab.screenshot(t, filepath.Join(dir, "report.png"))
	if errs := tab.errors(); len(errs) > 0 {
		t.Errorf("console errors or dialogs:\n%s", strings.Join(errs, "\n"))
	}
}

// `check serve`'s index lists both runs, newest first, with their
// verdicts, and its links lead to the reports.
func TestServeIndexInChromium(t *testing.T) {
	store, invalid, valid := memoryRuns(t)
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveStore(ctx, store, "127.0.0.1:0", io.Discard, func(u string) { urls <- u }) }()
	var base string
	select {
	case base = <-urls:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve did not stop cleanly: %v", err)
		}
	}()
	tab := newTab(t)
	tab.open(t, base)
	var idx struct {
		Rows     int
		Verdicts []string
		Tests    []string
		Links    []string
	}
	tab.eval(t, `({Rows: document.querySelectorAll('#runs tbody tr.run').length,
	  Verdicts: [...document.querySelectorAll('#runs tbody tr.run .verdict')].map(e => e.textContent),
	  Tests: [...document.querySelectorAll('#runs tbody tr.run td.test')].map(e => e.textContent),
	  Links: [...document.querySelectorAll('#runs tbody tr.run a')].filter(a => a.textContent == 'report.html').map(a => a.href)})`, &idx)
	t.Logf("index: %+v", idx)
	if idx.Rows < 2 || len(idx.Links) < 2 {
		t.Fatalf("the index lists %d runs with %d report links, want both runs", idx.Rows, len(idx.Links))
	}
	want := map[string]string{filepath.Base(filepath.Dir(invalid)): "invalid", filepath.Base(filepath.Dir(valid)): "valid"}
	for i, name := range idx.Tests {
		if v, ok := want[name]; ok && idx.Verdicts[i] != v {
			t.Errorf("%s shows %q, want %q", name, idx.Verdicts[i], v)
		}
	}
	tab.screenshot(t, filepath.Join(store, "index.png"))
	for _, link := range idx.Links[:2] {
		tab.open(t, link)
		var v string
		tab.eval(t, `document.getElementById('verdict').textContent`, &v)
		if v != "VALID" && v != "INVALID" {
			t.Errorf("%s: #verdict %q", link, v)
		}
	}
	if errs := tab.errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
