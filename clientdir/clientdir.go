// Package clientdir reads a user's lock client directory for `check
// --client DIR`: its manifest, fencecheck-client.json (name, protocol,
// command, packages, build, go_build; docs/client-protocol.md), and the
// files that go into the client image, with the hash that tags that image.
//
// It validates everything before anything is created, naming the file and
// the field at fault. It never runs the client, builds anything or talks to
// Docker (compose builds the image from what it returns).
package clientdir

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/internal/jsonerr"
	"github.com/fencecheck/fencecheck/lockclient"
)

// ManifestName is the manifest's file name in a client directory.
const ManifestName = "fencecheck-client.json"

// Protocols lists the protocol versions this build speaks.
var Protocols = []int{lockclient.Version}

// Manifest is fencecheck-client.json.
type Manifest struct {
	Name     string   `json:"name"`
	Protocol int      `json:"protocol"`
	Command  []string `json:"command"`
	Packages []string `json:"packages,omitempty"`
	Build    []string `json:"build,omitempty"`
	// GoBuild, when set, is a Go package path relative to the directory
	// (e.g. "."), compiled on the host with CGO_ENABLED=0 for the
	// containers; the binary lands in /client/<name>.
	GoBuild string `json:"go_build,omitempty"`
}

// File is one file of the directory, as it goes into /client.
type File struct {
	Name string // slash-separated, relative to the directory
	Mode fs.FileMode
	Data []byte
}

// Client is a loaded client directory.
type Client struct {
	Dir      string // absolute
	Manifest Manifest
	Raw      []byte // the manifest's bytes
	Files    []File
}

// MaxSize bounds a client directory's files: it is copied into an image
// and read into memory.
const MaxSize = 64 << 20

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,39}$`)
	packagePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`)
)

// Load reads and validates the client directory dir.
func Load(dir string) (*Client, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such directory (give the directory that holds %s)", dir, ManifestName)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%s: not a directory (give the directory that holds %s, not a file in it)", dir, ManifestName)
	}
	path := filepath.Join(abs, ManifestName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s in it (see docs/client-protocol.md for the manifest)", dir, ManifestName)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Client{Dir: abs, Manifest: m, Raw: raw}
	if err := c.readFiles(); err != nil {
		return nil, err
	}
	if m.GoBuild != "" {
		if st, err := os.Stat(filepath.Join(abs, filepath.FromSlash(m.GoBuild))); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s: go_build %q is not a directory of the client (want a package path such as \".\")", path, m.GoBuild)
		}
	}
	return c, nil
}

// ParseManifest parses and checks a manifest's bytes; errors name the
// field.
func ParseManifest(raw []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("not a valid manifest: %s (fields: name, protocol, command, packages, build, go_build)", jsonerr.Message(raw, err))
	}
	switch {
	case m.Name == "":
		return m, errors.New(`field "name" is missing (how runs and reports name this client, e.g. "kazoo")`)
	case !namePattern.MatchString(m.Name):
		return m, fmt.Errorf(`field "name": %q must be 1 to 40 of a-z, 0-9, '.', '_', '-', starting with a letter or digit`, m.Name)
	case m.Protocol == 0:
		return m, fmt.Errorf(`field "protocol" is missing (the protocol version the program speaks; this fencecheck speaks %s)`, versions())
	case !slices.Contains(Protocols, m.Protocol):
		return m, fmt.Errorf(`field "protocol": version %d is not one this fencecheck speaks (%s)`, m.Protocol, versions())
	case len(m.Command) == 0 || m.Command[0] == "":
		return m, errors.New(`field "command" is missing or empty (the program's command line as a list, run in /client, e.g. ["python3", "client.py"])`)
	case m.GoBuild != "" && (filepath.IsAbs(m.GoBuild) || slices.Contains(strings.Split(filepath.ToSlash(m.GoBuild), "/"), "..")):
		return m, fmt.Errorf(`field "go_build": %q must be a package path inside the client directory, e.g. "."`, m.GoBuild)
	}
	for _, p := range m.Packages {
		if !packagePattern.MatchString(p) {
			return m, fmt.Errorf(`field "packages": %q is not a Debian package name (e.g. "python3-kazoo")`, p)
		}
	}
	for i, b := range m.Build {
		if strings.TrimSpace(b) == "" {
			return m, fmt.Errorf(`field "build": command %d is empty`, i+1)
		}
	}
	return m, nil
}

func versions() string {
	var s []string
	for _, v := range Protocols {
		s = append(s, fmt.Sprint(v))
	}
	return strings.Join(s, ", ")
}

// readFiles reads every regular file of the directory (symlinks and
// special files are refused, .git is skipped).
func (c *Client) readFiles() error {
	total := 0
	err := filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.Dir, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: %s is not a regular file (a symlink or device); copy the file in instead", c.Dir, rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += int(info.Size())
		if total > MaxSize {
			return fmt.Errorf("%s: its files pass %d MiB; keep build outputs and data out of the client directory", c.Dir, MaxSize>>20)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c.Files = append(c.Files, File{Name: filepath.ToSlash(rel), Mode: info.Mode().Perm(), Data: b})
		return nil
	})
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Name < c.Files[j].Name })
	return err
}

// Hash is 12 hex digits of a SHA-256 over the manifest and every file
// (name, mode, contents), each framed by its length.
func (c *Client) Hash() string {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put(c.Raw)
	for _, f := range c.Files {
		put([]byte(f.Name))
		put([]byte(f.Mode.String()))
		put(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
