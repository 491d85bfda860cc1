package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A corrupt results.json is named by its path, with what is wrong in
// plain words; LoadRun adds what to do about it.
func TestCorruptResultsJSONIsNamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	os.WriteFile(path, []byte("{\"schema\": \"fencecheck/results/v1\",\n  nope}"), 0o644)
	_, err := ReadResults(path)
	want := path + ": not valid JSON at line 2, column 3"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ReadResults: %v, want %q", err, want)
	}
	os.WriteFile(path, []byte(`{"schema": "fencecheck/results/v1", "params": {}}`), 0o644)
	if _, err := ReadResults(path); err == nil || !strings.Contains(err.Error(), `field "params" must be a list, got an object`) {
		t.Errorf("ReadResults: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "history.jsonl"), nil, 0o644)
	if _, err := LoadRun(dir); err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "move results.json away") {
		t.Errorf("LoadRun: %v", err)
	}
}
