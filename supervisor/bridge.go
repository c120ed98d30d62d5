package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// bridge answers a JS worker's requests for files and the network. It enforces
// everything: the worker is untrusted and only ever sees what is returned here.
// One bridge serves one call; it is used from one goroutine.
type bridge struct {
	mounts      []policy.Mount
	roots       map[string]*os.Root // by mount sandbox path, opened on first use
	maxRead     int64
	maxWrite    int64
	readBytes   int64
	writeBytes  int64
	network     bool
	deadline    time.Time
	fetchClient fetcher
}

func newBridge(mounts []policy.Mount, maxRead, maxWrite int64, network bool, deadline time.Time) *bridge {
	return &bridge{mounts: mounts, roots: map[string]*os.Root{}, maxRead: maxRead, maxWrite: maxWrite, network: network, deadline: deadline}
}

func (b *bridge) close() {
	for _, r := range b.roots {
		r.Close()
	}
}

func (b *bridge) handle(ctx context.Context, req *proto.Bridge) *proto.Reply {
	if req == nil {
		return &proto.Reply{Error: "bridge: empty request"}
	}
	data, err := b.dispatch(ctx, req.Op, req.Args)
	if err != nil {
		return &proto.Reply{ID: req.ID, Error: err.Error()}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return &proto.Reply{ID: req.ID, Error: "bridge: " + err.Error()}
	}
	return &proto.Reply{ID: req.ID, Data: raw}
}

type fileArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func (b *bridge) dispatch(ctx context.Context, op string, raw json.RawMessage) (any, error) {
	if op == "fetch" {
		if !b.network {
			return nil, errors.New("fetch: network is not allowed for this call (allowNetwork: false)")
		}
		return b.fetch(ctx, raw)
	}
	var a fileArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%s: bad arguments", op)
	}
	switch op {
	case "readFile":
		return b.readFile(a.Path)
	case "writeFile":
		if a.Content == nil {
			return nil, errors.New("writeFile: content must be a string")
		}
		return nil, b.writeFile(a.Path, *a.Content)
	case "listDir":
		return b.listDir(a.Path)
	}
	return nil, fmt.Errorf("bridge: unknown operation %q", op)
}

// locate resolves a sandbox path to its mount's root and the path beneath it.
func (b *bridge) locate(op, p string) (*policy.Mount, *os.Root, string, error) {
	m, rel, err := policy.Resolve(b.mounts, p)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %s", op, strings.TrimPrefix(err.Error(), policy.ErrInvalid.Error()+": "))
	}
	r, ok := b.roots[m.Sandbox]
	if !ok {
		if r, err = os.OpenRoot(m.Host); err != nil {
			return nil, nil, "", fmt.Errorf("%s: opening mount %s: %w", op, m.Sandbox, err)
		}
		b.roots[m.Sandbox] = r
	}
	return m, r, rel, nil
}

// explain turns an os.Root error into one that names the sandbox path, not the host's.
func explain(op, p string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %s: no such file or directory", op, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: %s: permission denied", op, p)
	case errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes"):
		return fmt.Errorf("%s: %s: path escapes its mount (a symlink points outside it)", op, p)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: %s: too many levels of symbolic links", op, p)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: %s: not a directory", op, p)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s: %s: is a directory", op, p)
	}
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %v", op, p, pe.Err)
	}
	return fmt.Errorf("%s: %s: %v", op, p, err)
}

func (b *bridge) readFile(p string) (string, error) {
	_, r, rel, err := b.locate("readFile", p)
	if err != nil {
		return "", err
	}
	// O_NONBLOCK: a FIFO must not block the call; it is rejected below anyway.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", explain("readFile", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", explain("readFile", p, err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("readFile: %s: is a directory", p)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("readFile: %s: not a regular file (%s)", p, fi.Mode().Type())
	}
	left := b.maxRead - b.readBytes
	if fi.Size() > left {
		return "", fmt.Errorf("readFile: %s: %d bytes would exceed maxReadBytes (%d, %d already read)", p, fi.Size(), b.maxRead, b.readBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, left+1))
	if err != nil {
		return "", explain("readFile", p, err)
	}
	if int64(len(data)) > left {
		return "", fmt.Errorf("readFile: %s: file grew past maxReadBytes (%d)", p, b.maxRead)
	}
	b.readBytes += int64(len(data))
	return string(data), nil
}

func (b *bridge) writeFile(p, content string) error {
	m, r, rel, err := b.locate("writeFile", p)
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
	// An existing target must be a regular file (or a link to one inside the mount);
	// its mode is kept.
	mode := os.FileMode(0o644)
	if fi, err := r.Stat(rel); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("writeFile: %s: not a regular file (%s)", p, fi.Mode().Type())
		}
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return explain("writeFile", p, err)
	}
	// Write beside the target, then rename: the target is never half-written.
	dir, base := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	tmp := path.Join(dir, fmt.Sprintf(".%s.autobox-%d.tmp", base, time.Now().UnixNano()))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
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
		werr = r.Rename(tmp, resolvedTarget(r, rel))
	}
	if werr != nil {
		_ = r.Remove(tmp)
		return explain("writeFile", p, werr)
	}
	b.writeBytes += n
	return nil
}

// resolvedTarget follows a symlink at rel (one that stays inside the root, as the
// Stat above proved) so that writing through it replaces the file it names rather
// than the link itself.
func resolvedTarget(r *os.Root, rel string) string {
	target, err := r.Readlink(rel)
	if err != nil || path.IsAbs(target) {
		return rel
	}
	return path.Join(path.Dir(rel), target)
}

func (b *bridge) listDir(p string) ([]string, error) {
	_, r, rel, err := b.locate("listDir", p)
	if err != nil {
		return nil, err
	}
	f, err := r.Open(rel)
	if err != nil {
		return nil, explain("listDir", p, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, explain("listDir", p, err)
	}
	sort.Strings(names)
	return names, nil
}
