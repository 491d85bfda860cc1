package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The docs keep their promises where a test can tell: every --flag they
// name exists on some command, and every verdict sentence they quote is
// one the code can print.

// docFiles are the pages a user reads: the README and docs/.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	paths, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	paths = append(paths, filepath.Join(root, "README.md"))
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
	}
	if len(out) < 5 {
		t.Fatalf("found only %d doc files: %v", len(out), paths)
	}
	return out
}

// allFlags walks the command tree: every flag of every command (local,
// persistent and inherited), by name.
func allFlags() map[string]bool {
	out := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	return out
}

// benchFlags are bench/run's flags (a program of its own, with Go's flag
// package), read from its source.
func benchFlags(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "bench", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`flag\.\w+\((?:&[\w.]+, )?"([a-z0-9-]+)"`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	if !out["docker"] || !out["only"] {
		t.Fatalf("bench/main.go's flags not found: %v", out)
	}
	return out
}

// Programs whose flags a doc may name besides check's: bench/run's are
// checked against bench, the others are not fencecheck's to check.
var (
	programWord = regexp.MustCompile(`(?:^|[\s'"(/.=])(bin/check|\./check|check|bench/run|redis-server|kube-apiserver|initdb|systemd-run|sbatch|parallel|docker|etcdctl|ssh|go|git|curl|apt-get)(?:$|[\s'"):])`)
	flagWord    = regexp.MustCompile(`(?:^|[\s'"(\x60\[|,])--([a-z][a-z0-9-]*)`)
	codeSpan    = regexp.MustCompile("`([^`]+)`")
)

// spans cuts a page into the pieces a flag belongs to: each line of a
// code block (lines ending in \ joined), each inline code span, and each
// line of prose with its code spans taken out.
func spans(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	inFence := false
	var prose strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		indented := strings.HasPrefix(l, "    ") && !strings.HasPrefix(strings.TrimSpace(l), "-") && !strings.HasPrefix(strings.TrimSpace(l), "|")
		if inFence || indented {
			for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + lines[i]
			}
			out = append(out, l)
			continue
		}
		prose.WriteString(l + "\n")
	}
	p := prose.String()
	for _, m := range codeSpan.FindAllStringSubmatch(p, -1) {
		out = append(out, strings.Join(strings.Fields(m[1]), " "))
	}
	out = append(out, strings.Split(codeSpan.ReplaceAllString(p, "` `"), "\n")...)
	return out
}

func TestDocumentedFlagsExist(t *testing.T) {
	check, bench := allFlags(), benchFlags(t)
	if !check["check-memory"] || !check["preset"] || !check["id"] {
		t.Fatalf("the command tree's flags were not all found: %d", len(check))
	}
	seen := 0
	for file, text := range docFiles(t) {
		for _, s := range spans(text) {
			progs := programWord.FindAllStringSubmatchIndex(s, -1)
			for _, f := range flagWord.FindAllStringSubmatchIndex(s, -1) {
				name := s[f[2]:f[3]]
				owner := "check"
				for _, p := range progs {
					if p[2] < f[2] {
						owner = s[p[2]:p[3]]
					}
				}
				if len(progs) == 0 && !check[name] && bench[name] && strings.Contains(text, "bench/run") {
					owner = "bench/run" // a page about bench/run naming its flag alone
				}
				switch owner {
				case "check", "bin/check", "./check":
					seen++
					if !check[name] {
						t.Errorf("%s names --%s, which no command of check has: %q", file, name, s)
					}
				case "bench/run":
					if !bench[name] {
						t.Errorf("%s names --%s for bench/run, which has no such flag: %q", file, name, s)
					}
				}
			}
		}
	}
	if seen < 100 {
		t.Errorf("only %d flags found in the docs: the extraction is broken", seen)
	}
}

// verdictFormats are the string literals of models, reports and harness
// (the formats a verdict sentence is printed with), and how the anomalies
// the checker names end ("…: a stale lease holder's write was accepted"):
// the part after the last ": " of the formats in models that describe a
// process's op or a token.
func verdictFormats(t *testing.T) (formats []string, endings []string) {
	t.Helper()
	seen := map[string]bool{}
	var modelFormats []string
	for _, dir := range []string{"models", "reports", "harness"} {
		paths, _ := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || seen[s] {
					return true
				}
				seen[s] = true
				formats = append(formats, s)
				if dir == "models" {
					modelFormats = append(modelFormats, s)
				}
				if dir == "models" && (strings.HasPrefix(s, "process %d") || strings.HasPrefix(s, "token %d")) {
					if i := strings.LastIndex(s, ": "); i > 0 && !strings.Contains(s[i:], "%") {
						endings = append(endings, s[i+2:])
					}
				}
				return true
			})
		}
	}
	sort.Strings(endings)
	// The verb just before a sentence's ending may hold a clause that
	// models builds with a format of its own ("…%s: a stale lease
	// holder's write was accepted" with "; the storage then held %d, from
	// %s"): add each sentence with each such clause in its place.
	var clauses []string
	for _, f := range modelFormats {
		if strings.HasPrefix(f, "; ") && strings.Contains(f, "%") {
			clauses = append(clauses, f)
		}
	}
	for _, f := range formats {
		e := hasEnding(f, endings)
		if e == "" || !strings.HasSuffix(f, "%s: "+e) {
			continue
		}
		i := len(f) - len("%s: "+e)
		for _, c := range clauses {
			formats = append(formats, f[:i]+c+f[i+2:])
		}
	}
	return formats, endings
}

// hasEnding is the verdict ending s ends with, or "".
func hasEnding(s string, endings []string) string {
	for _, e := range endings {
		if strings.HasSuffix(s, e) {
			return e
		}
	}
	return ""
}

// fits reports whether a sentence quoted in a doc can be what format
// prints: a verb (%d, %s, …) stands for any text, and an ellipsis in the
// quote for any part of the format left out.
func fits(quote, format string) bool {
	q, f := []rune(quote), []rune(format)
	memo := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		memo[key] = false
		var r bool
		switch {
		case i == len(q) && j == len(f):
			r = true
		case i < len(q) && (q[i] == '…' || strings.HasPrefix(string(q[i:]), "...")):
			n := 1
			if q[i] != '…' {
				n = 3
			}
			// The ellipsis stands for format[j:k], k >= j.
			for k := j; k <= len(f) && !r; k++ {
				r = match(i+n, k)
			}
		case j < len(f) && f[j] == '%' && j+1 < len(f) && f[j+1] != '%':
			// A verb stands for quote[i:k]: %d for a whole number, any
			// other for a value or a name, which holds no clause of its
			// own (no , ; or :), so a sentence with a clause the format
			// lacks does not fit.
			for k := i; k <= len(q) && !r; k++ {
				r = match(k, j+2)
				if k < len(q) && (f[j+1] == 'd' && !strings.ContainsRune("-0123456789", q[k]) || strings.ContainsRune(",;:", q[k])) {
					break
				}
			}
		case i < len(q) && j < len(f) && q[i] == f[j]:
			r = match(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return match(0, 0)
}

// quotes are the sentences a doc quotes: in double quotes, in code spans,
// and the INVALID:/UNKNOWN: lines of a console shown in a code block.
func quotes(text string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`"([^"\n]+(?:\n[^"\n]+)?)"`), codeSpan} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			out = append(out, strings.Join(strings.Fields(m[1]), " "))
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^(?:INVALID|UNKNOWN): ((?:.+\n)+?)(?:report:|\n)`).FindAllStringSubmatch(text, -1) {
		out = append(out, strings.Join(strings.Fields(m[1]), " "))
	}
	return out
}

func TestDocumentedVerdictSentencesAreTheCodes(t *testing.T) {
	formats, endings := verdictFormats(t)
	for _, want := range []string{"a stale lease holder's write was accepted", "an update was lost", "tokens must only increase"} {
		if !strings.Contains(strings.Join(endings, "\n"), want) {
			t.Fatalf("the verdict endings found in models are %q: %q is missing", endings, want)
		}
	}
	// A format fits a quote of itself, with an ellipsis for a part left
	// out; a changed word does not.
	const f = "process %d wrote %s with token %d at %s: a stale lease holder's write was accepted"
	if !fits("process 3 wrote 58 with token 112 at 9.93 s: a stale lease holder's write was accepted", f) ||
		!fits("process 3 wrote 58 …: a stale lease holder's write was accepted", f) ||
		fits("process 3 wrote 58 with token 112 at 9.93 s, over the value 122: a stale lease holder's write was accepted", "process %d wrote %d with token %d at %d: a stale lease holder's write was accepted") {
		t.Fatal("fits does not tell a quote of a format from another sentence")
	}
	checked := 0
	for file, text := range docFiles(t) {
		for _, q := range quotes(text) {
			ending := ""
			for _, e := range endings {
				if strings.HasSuffix(q, e) {
					ending = e
				}
			}
			if ending == "" || q == ending {
				continue // not a verdict sentence, or its last words alone
			}
			// The quote may start with a label ("invalid: ", "key k0: "):
			// it must fit from its start or from just after a colon.
			ok := false
			words := strings.Fields(q)
			for w := 0; w < len(words) && !ok; w++ {
				if w > 0 && !strings.HasSuffix(words[w-1], ":") {
					continue
				}
				tail := strings.Join(words[w:], " ")
				if tail == ending {
					break // the ending alone says nothing of the sentence
				}
				for _, f := range formats {
					if strings.HasSuffix(f, ending) && fits(tail, f) {
						ok = true
						break
					}
				}
			}
			checked++
			if !ok {
				t.Errorf("%s quotes a verdict sentence the code cannot print:\n%s", file, q)
			}
		}
	}
	if checked < 3 {
		t.Errorf("only %d verdict sentences found in the docs: the extraction is broken", checked)
	}
}
