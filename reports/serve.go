package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
)

// StoreServer serves a store read-only over HTTP, as Jepsen's serve
// does: the index of every run at /, and each run's files under
// /<test>/<stamp>/. It serves only what is inside the store directory:
// paths with ".." are refused, and the store is opened as an os.Root, so
// no symbolic link leads outside it (such a link is answered 403). It answers only requests addressed
// to a loopback name (localhost, 127.0.0.1, [::1]), so a web page cannot
// reach it through DNS rebinding.
type StoreServer struct {
	dir   string
	root  *os.Root
	files http.Handler
}

// NewStoreServer opens the store directory dir.
func NewStoreServer(dir string) (*StoreServer, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// The root's own error for a path that leads out of it, to tell it
	// from the system's errors.
	var escapes error
	var pe *fs.PathError
	if _, err := root.Open(".."); errors.As(err, &pe) {
		escapes = pe.Err
	}
	return &StoreServer{dir: dir, root: root, files: http.FileServerFS(storeFS{root.FS(), escapes})}, nil
}

// storeFS is the store as the file server sees it. The root refuses a
// path that a symbolic link leads out of the store with an error of its
// own, which the file server would answer with 500; storeFS makes it a
// permission error, answered 403 like any other forbidden file. Errors
// from the system (a missing file, a read error) pass unchanged.
type storeFS struct {
	fs.FS
	escapes error
}

func (s storeFS) Open(name string) (fs.File, error) {
	f, err := s.FS.Open(name)
	if err != nil && s.escapes != nil && errors.Is(err, s.escapes) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}

// Close releases the store directory.
func (s *StoreServer) Close() error { return s.root.Close() }

// IsLoopbackHost reports whether host (a host or host:port) names this
// machine's loopback interface.
func IsLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *StoreServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "read only", http.StatusMethodNotAllowed)
		return
	}
	if !IsLoopbackHost(r.Host) {
		http.Error(w, "this server answers only to localhost", http.StatusForbidden)
		return
	}
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\") {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
	}
	if p == "/" || p == "/index.html" {
		s.index(w, r)
		return
	}
	switch path.Ext(p) {
	case ".jsonl", ".log":
		h.Set("Content-Type", "text/plain; charset=utf-8")
	case ".json":
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	s.files.ServeHTTP(w, r)
}

func (s *StoreServer) index(w http.ResponseWriter, r *http.Request) {
	runs, err := ListRuns(s.root.FS())
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the store: %v", err), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	if r.Method == http.MethodHead {
		return
	}
	if err := WriteIndex(w, s.dir, runs); err != nil {
		fmt.Fprintf(w, "\n<!-- error: %s -->", esc(err.Error()))
	}
}
