package jspool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"

	"github.com/autobox-dev/autobox/policy"
)

// The file verbs of the bridge. Each looks at what a path is (stat, which opens
// nothing) before it opens it, and opens with O_NONBLOCK, so a FIFO or a device is
// refused without ever blocking; and each runs through hostOp, so a filesystem that
// does not answer at all still cannot keep the call past its deadline. The functions
// given to hostOp take copies of what they need: they may outlive the request.

// openFlags are added to every open of the bridge: a FIFO swapped in after the stat
// still cannot block the open, and a terminal never becomes the server's.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// kindOf names a file type in words a user knows.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a unix socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file of type " + m.Type().String()
}

func notRegular(op, p string, m fs.FileMode) error {
	if m.IsDir() {
		return fmt.Errorf("%s: %s: is a directory", op, p)
	}
	return fmt.Errorf("%s: %s: not a regular file: it is %s", op, p, kindOf(m))
}

func (b *bridge) readFile(ctx context.Context, p string) (string, error) {
	m, r, rel, err := b.locate(ctx, "readFile", p)
	if err != nil {
		return "", err
	}
	mount := m.Sandbox
	left, maxRead, already := b.maxRead-b.readBytes, b.maxRead, b.readBytes
	data, err := hostOp(ctx, func() (string, error) {
		fi, err := r.Stat(rel)
		if err != nil {
			return "", explain("readFile", p, err)
		}
		if !fi.Mode().IsRegular() {
			return "", notRegular("readFile", p, fi.Mode())
		}
		f, err := r.OpenFile(rel, os.O_RDONLY|openFlags, 0)
		if err != nil {
			return "", explain("readFile", p, err)
		}
		defer f.Close()
		if kind := pseudoFS(f); kind != "" {
			return "", onPseudoFS("readFile", p, mount, kind)
		}
		if fi, err = f.Stat(); err != nil {
			return "", explain("readFile", p, err)
		}
		if !fi.Mode().IsRegular() {
			return "", notRegular("readFile", p, fi.Mode())
		}
		if fi.Size() > left {
			return "", fmt.Errorf("readFile: %s: %d bytes would exceed maxReadBytes (%d, %d already read)", p, fi.Size(), maxRead, already)
		}
		data, err := io.ReadAll(io.LimitReader(f, left+1))
		if err != nil {
			return "", explain("readFile", p, err)
		}
		if int64(len(data)) > left {
			return "", fmt.Errorf("readFile: %s: file grew past maxReadBytes (%d)", p, maxRead)
		}
		return string(data), nil
	}, nil)
	if late := lateError("readFile", p, err); late != nil {
		return "", late
	}
	if err != nil {
		return "", err
	}
	b.readBytes += int64(len(data))
	return data, nil
}

func (b *bridge) writeFile(ctx context.Context, p, content string) error {
	m, r, rel, err := b.locate(ctx, "writeFile", p)
	if err != nil {
		return err
	}
	if !m.Writable {
		return fmt.Errorf("writeFile: %s: mount %s is read-only", p, m.Sandbox)
	}
	if rel == "." {
		return fmt.Errorf("writeFile: %s: is a directory", p)
	}
	n := int64(len(content))
	if b.writeBytes+n > b.maxWrite {
		return fmt.Errorf("writeFile: %s: %d bytes would exceed maxWriteBytes (%d, %d already written)", p, n, b.maxWrite, b.writeBytes)
	}
	mount := m.Sandbox
	_, err = hostOp(ctx, func() (struct{}, error) { return struct{}{}, replaceFile(ctx, r, rel, p, mount, content) }, nil)
	if late := lateError("writeFile", p, err); late != nil {
		return late
	}
	if err != nil {
		return err
	}
	b.writeBytes += n
	return nil
}

// replaceFile writes content to a temp file beside the target and renames it into
// place, so the target is never half-written. The target's directory is opened once
// and the temp file is created, renamed and (on failure) removed through that one
// descriptor: a directory or link swapped in on the way meanwhile cannot make the
// rename land elsewhere or the clean-up miss the temp file. It gives up before the
// rename once ctx has ended, so a write the call stopped waiting for never appears.
func replaceFile(ctx context.Context, r *os.Root, rel, p, mount, content string) error {
	// An existing target must be a regular file (or a link to one inside the mount);
	// its mode is kept.
	mode := os.FileMode(0o644)
	if fi, err := r.Stat(rel); err == nil {
		if !fi.Mode().IsRegular() {
			return notRegular("writeFile", p, fi.Mode())
		}
		mode = fi.Mode().Perm()
	} else if !os.IsNotExist(err) {
		return explain("writeFile", p, err)
	}
	dir, base := path.Split(resolvedTarget(r, rel))
	if dir == "" {
		dir = "."
	}
	d, err := r.OpenRoot(dir)
	if err != nil {
		return explain("writeFile", p, err)
	}
	defer d.Close()
	if err := refusePseudoDir(d, "writeFile", p, mount); err != nil {
		return err
	}
	tmp := fmt.Sprintf(".%s.autobox-%s.tmp", base, randomHex())
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, mode)
	if err != nil {
		return explain("writeFile", p, err)
	}
	_, werr := io.WriteString(f, content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = ctx.Err()
	}
	if werr == nil {
		werr = d.Rename(tmp, base)
	}
	if werr != nil {
		_ = d.Remove(tmp)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return explain("writeFile", p, werr)
	}
	return nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// resolvedTarget follows symlinks at rel (ones that stay inside the root, as the Stat
// before proved) so that writing through one replaces the file it names rather than
// the link itself.
func resolvedTarget(r *os.Root, rel string) string {
	for range 40 {
		fi, err := r.Lstat(rel)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return rel
		}
		target, err := r.Readlink(rel)
		if err != nil || path.IsAbs(target) {
			return rel
		}
		rel = path.Join(path.Dir(rel), target)
	}
	return rel
}

func (b *bridge) listDir(ctx context.Context, p string) ([]string, error) {
	m, r, rel, err := b.locate(ctx, "listDir", p)
	if err != nil {
		return nil, err
	}
	mount := m.Sandbox
	names, err := hostOp(ctx, func() ([]string, error) {
		fi, err := r.Stat(rel)
		if err != nil {
			return nil, explain("listDir", p, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("listDir: %s: not a directory: it is %s", p, kindOf(fi.Mode()))
		}
		// O_DIRECTORY: whatever was swapped in after the stat is opened only if it is
		// a directory.
		f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|openFlags, 0)
		if err != nil {
			return nil, explain("listDir", p, err)
		}
		defer f.Close()
		if kind := pseudoFS(f); kind != "" {
			return nil, onPseudoFS("listDir", p, mount, kind)
		}
		names, err := f.Readdirnames(-1)
		if err != nil {
			return nil, explain("listDir", p, err)
		}
		sort.Strings(names)
		return names, nil
	}, nil)
	if late := lateError("listDir", p, err); late != nil {
		return nil, late
	}
	return names, err
}

// onPseudoFS is the refusal of a file on a kernel pseudo-filesystem (see
// pseudoFilesystems), naming the mount it was reached through.
func onPseudoFS(op, p, mount, kind string) error {
	return pseudoFSError(fmt.Sprintf("%s: %s: is on a %s filesystem (reached through mount %s); execute_js does not serve the kernel's pseudo-filesystems, which would show the server's own process", op, p, kind, mount))
}

// pseudoFSError is onPseudoFS's error, whole as it is.
type pseudoFSError string

func (e pseudoFSError) Error() string { return string(e) }

// refusePseudoDir refuses a directory of r on a kernel pseudo-filesystem.
func refusePseudoDir(r *os.Root, op, p, mount string) error {
	f, err := r.Open(".")
	if err != nil {
		return explain(op, p, err)
	}
	defer f.Close()
	if kind := pseudoFS(f); kind != "" {
		return onPseudoFS(op, p, mount, kind)
	}
	return nil
}

// RefusePseudoMounts refuses, before an execute_js call starts, a mount whose
// host path is a kernel pseudo-filesystem (the bridge would refuse each of
// its files anyway; a mount holding one, such as /, is refused file by file).
func RefusePseudoMounts(mounts []policy.Mount) error {
	for _, m := range mounts {
		if kind := pseudoFSAt(m.Host); kind != "" {
			return fmt.Errorf("%w: mounts: hostPath %s (at %s) is a %s filesystem; execute_js does not serve the kernel's pseudo-filesystems, which would show the server's own process", policy.ErrInvalid, m.Host, m.Sandbox, kind)
		}
	}
	return nil
}
