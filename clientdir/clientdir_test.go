package clientdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestErrorsNameTheField(t *testing.T) {
	for manifest, want := range map[string]string{
		`{"protocol":1,"command":["x"]}`:                               `field "name" is missing`,
		`{"name":"Kazoo!","protocol":1,"command":["x"]}`:               `field "name": "Kazoo!"`,
		`{"name":"k","command":["x"]}`:                                 `field "protocol" is missing`,
		`{"name":"k","protocol":2,"command":["x"]}`:                    `field "protocol": version 2 is not one this fencecheck speaks (1)`,
		`{"name":"k","protocol":1}`:                                    `field "command" is missing`,
		`{"name":"k","protocol":1,"command":["x"],"pakages":["a"]}`:    `unknown field "pakages"`,
		`{"name":"k","protocol":1,"command":["x"],"packages":["a b"]}`: `field "packages": "a b"`,
		`{"name":"k","protocol":1,"command":["x"],"build":[" "]}`:      `field "build": command 1 is empty`,
		`{"name":"k","protocol":1,"command":["x"],"go_build":"../x"}`:  `field "go_build"`,
		`not json`: `not a valid manifest: not valid JSON at line 1, column 2: invalid character 'o' in literal null`,
		`{"name":"k","protocol":1,"command":"python3 client.py"}`: `not a valid manifest: field "command" must be a list of strings, got a string`,
		`{"name":"k","protocol":"1","command":["x"]}`:             `field "protocol" must be a number, got a string`,
	} {
		_, err := ParseManifest([]byte(manifest))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", manifest, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "json:")) {
			t.Errorf("%s: Go's words in %v", manifest, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "no fencecheck-client.json") {
		t.Errorf("no manifest: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"name":"k","protocol":1,"command":["python3","c.py"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "c.py"), []byte("print()"), 0o644)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hash()
	os.WriteFile(filepath.Join(dir, "c.py"), []byte("print(1)"), 0o644)
	if c2, _ := Load(dir); c2.Hash() == h || len(c2.Files) != 2 {
		t.Errorf("a changed file kept the hash %s (%d files)", h, len(c2.Files))
	}
	os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"name":"k","protocol":7,"command":["x"]}`), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ManifestName)+": field \"protocol\"") {
		t.Errorf("bad manifest: %v", err)
	}
}
