package sshnodes

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	q "github.com/fencecheck/fencecheck/internal/shellquote"
)

// CopyTo writes content to dstPath (absolute) on the node's host, owned
// by root, with mode; the directory must exist. The file is written
// beside and renamed into place, so a reader never sees half of it. It
// works on a paused node.
func (hs *Hosts) CopyTo(ctx context.Context, node, dstPath string, content []byte, mode int64) error {
	h, err := hs.host(node)
	if err != nil {
		return err
	}
	return h.copyTo(ctx, dstPath, content, mode)
}

func (h *host) copyTo(ctx context.Context, dstPath string, content []byte, mode int64) error {
	if !path.IsAbs(dstPath) || strings.HasSuffix(dstPath, "/") {
		return fmt.Errorf("copy to %s: %q is not an absolute file path", h.Name, dstPath)
	}
	dst := path.Clean(dstPath)
	dir := path.Dir(dst)
	tmp := dst + ".fencecheck-tmp"
	script := fmt.Sprintf(`[ -d %[1]s ] || { echo %[4]s >&2; exit 3; }
cat > %[2]s && chmod %[5]o %[2]s && mv -f %[2]s %[3]s || { rm -f %[2]s; exit 1; }
`, q.Quote(dir), q.Quote(tmp), q.Quote(dst), q.Quote("directory "+dir+" does not exist"), mode&0o7777)
	res, err := h.run(ctx, h.rootLine(script, nil), bytes.NewReader(content))
	if err != nil {
		return fmt.Errorf("copy to %s:%s: %w", h.Name, dstPath, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("copy to %s:%s: %s (exit %d)", h.Name, dstPath, strings.TrimSpace(res.Stderr), res.ExitCode)
	}
	return nil
}

// CopyFrom reads the regular file srcPath on the node's host. A missing
// file gives an error for which errors.Is(err, fs.ErrNotExist) holds.
func (hs *Hosts) CopyFrom(ctx context.Context, node, srcPath string) ([]byte, error) {
	h, err := hs.host(node)
	if err != nil {
		return nil, err
	}
	p := q.Quote(srcPath)
	script := fmt.Sprintf("[ -e %[1]s ] || exit 3\n[ -f %[1]s ] || exit 4\nexec cat -- %[1]s\n", p)
	res, err := h.runRoot(ctx, script, nil)
	if err != nil {
		return nil, fmt.Errorf("copy from %s:%s: %w", node, srcPath, err)
	}
	switch res.ExitCode {
	case 0:
		return []byte(res.Stdout), nil
	case 3:
		return nil, fmt.Errorf("copy from %s:%s: %w", node, srcPath, os.ErrNotExist)
	case 4:
		return nil, fmt.Errorf("copy from %s:%s: not a regular file", node, srcPath)
	}
	return nil, fmt.Errorf("copy from %s:%s: %s (exit %d)", node, srcPath, strings.TrimSpace(res.Stderr), res.ExitCode)
}

// Logs is empty: a host has no main process whose output the driver
// holds. The servers write their logs to files: see CollectLogsExcept.
func (hs *Hosts) Logs(ctx context.Context, node string) ([]byte, error) {
	if _, err := hs.host(node); err != nil {
		return nil, err
	}
	return nil, nil
}

// CollectLogsExcept copies, for every node but those in skip, the files
// and directories named in paths (by node name; "" names paths of every
// node) under dir/<node>/<path>, through tar on the host. Paths that do
// not exist are skipped. It goes on after errors and returns them all.
func (hs *Hosts) CollectLogsExcept(ctx context.Context, dir string, paths map[string][]string, skip map[string]bool) error {
	var errs []error
	for _, h := range hs.hosts {
		if skip[h.Name] {
			continue
		}
		nodeDir := filepath.Join(dir, h.Name)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		want := append(append([]string(nil), paths[""]...), paths[h.Name]...)
		sort.Strings(want)
		for i, p := range want {
			if i > 0 && p == want[i-1] {
				continue
			}
			if err := h.copyTree(ctx, p, nodeDir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// copyTree copies the file or directory srcPath of the host into
// dst/<srcPath>. Only regular files and directories are written.
func (h *host) copyTree(ctx context.Context, srcPath, dst string) error {
	if !path.IsAbs(srcPath) {
		return fmt.Errorf("collect from %s: %q is not an absolute path", h.Name, srcPath)
	}
	clean := path.Clean(srcPath)
	rel := strings.TrimPrefix(clean, "/")
	if rel == "" {
		return fmt.Errorf("collect from %s: will not copy the whole file system", h.Name)
	}
	s, err := h.session()
	if err != nil {
		return fmt.Errorf("collect %s:%s: %w", h.Name, srcPath, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	out, err := s.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	s.Stderr = &stderr
	script := fmt.Sprintf("[ -e %[1]s ] || exit 0\nexec tar -C / -cf - -- %[2]s\n", q.Quote(clean), q.Quote(rel))
	if err := s.Start(h.rootLine(script, nil)); err != nil {
		return fmt.Errorf("collect %s:%s: %w", h.Name, srcPath, err)
	}
	tr := tar.NewReader(out)
	var extractErr error
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			extractErr = err
			break
		}
		name := path.Clean("/" + hdr.Name) // no way out of dst
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("collect %s:%s: %w", h.Name, srcPath, err)
			}
		}
	}
	io.Copy(io.Discard, out)
	werr := s.Wait()
	if extractErr != nil && !(errors.Is(extractErr, io.ErrUnexpectedEOF) && werr == nil) {
		return fmt.Errorf("collect %s:%s: %w", h.Name, srcPath, extractErr)
	}
	if werr != nil {
		// tar's exit 1 ("file changed as we read it") still copied it.
		var exit interface{ ExitStatus() int }
		if errors.As(werr, &exit) && exit.ExitStatus() == 1 {
			return nil
		}
		return fmt.Errorf("collect %s:%s: %v: %s", h.Name, srcPath, werr, strings.TrimSpace(stderr.String()))
	}
	return nil
}
