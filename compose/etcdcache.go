package compose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// cachedEtcd36 returns the etcd 3.6 binary for goarch from the user's
// cache (os.UserCacheDir()/fencecheck), compiling it there the first time.
// The cache is fencecheck's own, not Go's: `go clean -cache` leaves it, so
// a rebuilt image (a new Dockerfile, a new Debian point release) does not
// pay the compile again. Its name carries the hash of the wrapper module's
// files, so a new etcd version never finds an old binary.
func cachedEtcd36(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	path := etcd36CachePath(goarch)
	if path != "" {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			fmt.Fprintf(progress, "compose: etcd 3.6 (linux/%s) from the cache, %s\n", archOrAmd64(goarch), path)
			return b, nil
		}
	}
	b, err := buildEtcd36(ctx, goarch, progress)
	if err != nil || path == "" {
		return b, err
	}
	if err := writeAtomically(path, b); err != nil {
		// A cache that cannot be written costs the next build a compile,
		// nothing more.
		fmt.Fprintf(progress, "compose: could not keep etcd 3.6 in the cache: %v\n", err)
	}
	return b, nil
}

// etcd36CachePath is where the binary for goarch is kept, or "" when the
// user has no cache directory.
func etcd36CachePath(goarch string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(etcd36Files))
	for name := range etcd36Files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(etcd36Files[name]), etcd36Files[name])
	}
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return filepath.Join(dir, "fencecheck", fmt.Sprintf("%s-%s-linux-%s", etcd36Binary, sum, archOrAmd64(goarch)))
}

// writeAtomically writes b to path through a temporary file beside it, so
// a reader never sees half a binary.
func writeAtomically(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
