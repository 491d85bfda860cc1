package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/words"
)

// EnsureBaseImage makes sure the daemon has BaseImage. fencecheck never
// pulls: when the image is missing it is created on this host with
// `debootstrap --variant=minbase bookworm` from the given mirror, cleaned and
// imported through the SDK. That needs root on a Debian-like Linux host; when
// debootstrap itself is missing it is installed with apt-get if we are root
// on Debian, and otherwise the error says what to run.
func EnsureBaseImage(ctx context.Context, cli *client.Client, mirrors Mirrors, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	exists, err := engine.ImageExists(ctx, cli, BaseImage)
	if err != nil || exists {
		return err
	}
	fmt.Fprintf(progress, "compose: %s is not on the daemon and fencecheck never pulls; creating it with debootstrap from %s\n",
		BaseImage, mirrors.Archive)

	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return engine.DaemonError(cli.DaemonHost(), err)
	}
	if runtime.GOOS != "linux" || ver.Arch != runtime.GOARCH {
		return fmt.Errorf("%s is missing and can only be made with debootstrap on a Linux host of the daemon's architecture (%s); load it into the daemon by other means",
			BaseImage, ver.Arch)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is missing; making it needs root: run `sudo debootstrap --variant=minbase bookworm DIR %s`, then import DIR as %s, or run this again as root",
			BaseImage, mirrors.Archive, BaseImage)
	}
	debootstrap, err := ensureDebootstrap(ctx, progress)
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "fencecheck-rootfs-")
	if err != nil {
		return err
	}
	defer func() {
		unmountUnder(dir) // a failed debootstrap may leave proc or sys mounted
		os.RemoveAll(dir)
	}()

	args := []string{"--variant=minbase"}
	if strings.HasPrefix(mirrors.Archive, "https://") || strings.HasPrefix(mirrors.Security, "https://") {
		args = append(args, "--include=ca-certificates")
	}
	args = append(args, "bookworm", dir, mirrors.Archive)
	fmt.Fprintf(progress, "compose: running %s %s\n", debootstrap, strings.Join(args, " "))
	start := time.Now()
	cmd := exec.CommandContext(ctx, debootstrap, args...)
	cmd.Stdout = progress
	cmd.Stderr = progress
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "debootstrap", "debootstrap.log"))
		return fmt.Errorf("debootstrap %s: %w\n%s", strings.Join(args, " "), err, words.Tail(string(log), 2000))
	}
	fmt.Fprintf(progress, "compose: debootstrap took %s\n", time.Since(start).Round(time.Second))

	if err := cleanRootfs(dir); err != nil {
		return fmt.Errorf("cleaning the debootstrap tree: %w", err)
	}
	start = time.Now()
	if err := importRootfs(ctx, cli, dir, mirrors, progress); err != nil {
		return err
	}
	fmt.Fprintf(progress, "compose: imported %s in %s\n", BaseImage, time.Since(start).Round(time.Second))
	return nil
}

// ensureDebootstrap finds debootstrap, installing it with apt-get when we
// are root on Debian.
func ensureDebootstrap(ctx context.Context, progress io.Writer) (string, error) {
	if p, err := lookPathSbin("debootstrap"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/etc/debian_version"); err != nil {
		return "", errors.New("debootstrap is not installed and this is not a Debian host: install debootstrap, e.g. `apt-get install -y debootstrap`")
	}
	apt, err := lookPathSbin("apt-get")
	if err != nil {
		return "", errors.New("debootstrap is not installed: run `apt-get install -y debootstrap`")
	}
	fmt.Fprintln(progress, "compose: debootstrap is missing; running apt-get install -y debootstrap")
	install := func() error {
		cmd := exec.CommandContext(ctx, apt, "install", "-y", "debootstrap")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = progress, progress
		return cmd.Run()
	}
	if err := install(); err != nil {
		fmt.Fprintln(progress, "compose: that failed; running apt-get update and trying again")
		update := exec.CommandContext(ctx, apt, "update")
		update.Stdout, update.Stderr = progress, progress
		if uerr := update.Run(); uerr != nil {
			return "", fmt.Errorf("apt-get update: %w (then run `apt-get install -y debootstrap`)", uerr)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("apt-get install -y debootstrap: %w", err)
		}
	}
	return lookPathSbin("debootstrap")
}

// lookPathSbin is exec.LookPath that also looks in the sbin directories,
// which a non-login root shell may lack on its PATH.
func lookPathSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// cleanRootfs strips what an image must not carry: apt's caches and lists,
// logs of the bootstrap, device nodes (Docker mounts its own /dev) and the
// host's resolv.conf and hostname (Docker mounts its own).
func cleanRootfs(dir string) error {
	for _, pattern := range []string{
		"var/cache/apt/archives/*.deb",
		"var/cache/apt/archives/partial/*",
		"var/cache/apt/*.bin",
		"var/lib/apt/lists/*",
		"var/log/apt/*",
		"var/log/*.log",
		"dev/*",
		"tmp/*",
		"var/tmp/*",
	} {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, m := range matches {
			if filepath.Base(m) == "partial" {
				continue
			}
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{"etc/resolv.conf", "etc/hostname"} {
		p := filepath.Join(dir, f)
		os.Remove(p) // it may be a symlink into the host's tree
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// importRootfs tars dir with the system's tar (it keeps hard links, device
// files, ownership and capabilities exactly) and imports the stream as
// BaseImage through the SDK.
func importRootfs(ctx context.Context, cli *client.Client, dir string, mirrors Mirrors, progress io.Writer) error {
	tarPath, err := exec.LookPath("tar")
	if err != nil {
		return errors.New("importing the debootstrap tree needs tar on PATH")
	}
	cmd := exec.CommandContext(ctx, tarPath, "--numeric-owner", "--xattrs", "--xattrs-include=security.capability",
		"-C", dir, "-cf", "-", ".")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("tar: %w", err)
	}
	resp, err := cli.ImageImport(ctx, image.ImportSource{Source: out, SourceName: "-"}, BaseImage, image.ImportOptions{
		Message: "debootstrap --variant=minbase bookworm " + mirrors.Archive,
		Changes: []string{
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"LABEL fencecheck.base=debootstrap-minbase-bookworm",
			`CMD ["bash"]`,
		},
	})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("importing %s: %w", BaseImage, engine.DaemonError(cli.DaemonHost(), err))
	}
	streamErr := readMessages(resp, progress)
	resp.Close()
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("tar of the debootstrap tree: %w: %s", err, words.Tail(stderr.String(), 1000))
	}
	if streamErr != nil {
		return fmt.Errorf("importing %s: %w", BaseImage, streamErr)
	}
	return nil
}
