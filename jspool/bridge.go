package jspool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/internal/nofollow"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// bridge answers a JS worker's requests for files and the network. It enforces
// everything: the worker is untrusted and only ever sees what is returned here.
// One bridge serves one call. Its file operations run on the call's goroutine
// only; fetches run concurrently (fetchasync.go) and touch nothing but what is
// set before the call starts (network, deadline, fetchClient).
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
	b := &bridge{mounts: mounts, roots: map[string]*os.Root{}, maxRead: maxRead, maxWrite: maxWrite, network: network, deadline: deadline}
	if network {
		b.fetchClient = newFetchClient(nil)
	}
	return b
}

// close releases what the call held: its mount roots and its fetch connections.
func (b *bridge) close() {
	for _, r := range b.roots {
		r.Close()
	}
	if b.fetchClient != nil {
		b.fetchClient.CloseIdleConnections()
	}
}

func (b *bridge) handle(ctx context.Context, req *proto.Bridge) *proto.Reply {
	if req == nil {
		return &proto.Reply{Error: "bridge: empty request"}
	}
	// No request outlives its call: whatever the file is, the answer comes by the
	// call's deadline.
	if !b.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, b.deadline)
		defer cancel()
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
		return b.readFile(ctx, a.Path)
	case "writeFile":
		if a.Content == nil {
			return nil, errors.New("writeFile: content must be a string")
		}
		return nil, b.writeFile(ctx, a.Path, *a.Content)
	case "listDir":
		return b.listDir(ctx, a.Path)
	}
	return nil, fmt.Errorf("bridge: unknown operation %q", op)
}

// locate resolves a sandbox path to its mount's root and the path beneath it.
func (b *bridge) locate(ctx context.Context, op, p string) (*policy.Mount, *os.Root, string, error) {
	m, rel, err := policy.Resolve(b.mounts, p)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %s", op, strings.TrimPrefix(err.Error(), policy.ErrInvalid.Error()+": "))
	}
	r, ok := b.roots[m.Sandbox]
	if !ok {
		host := m.Host
		mount := m.Sandbox
		r, err = hostOp(ctx, func() (*os.Root, error) {
			// Opened at first use, perhaps long after the call's hostPath was
			// checked canonical: a link swapped in on its path since is refused.
			r, err := nofollow.OpenRoot(host)
			if err != nil {
				return nil, err
			}
			if err := refusePseudoDir(r, op, p, mount); err != nil {
				r.Close()
				return nil, err
			}
			return r, nil
		}, func(r *os.Root) { r.Close() })
		if late := lateError(op, p, err); late != nil {
			return nil, nil, "", late
		}
		var pseudo pseudoFSError
		if errors.As(err, &pseudo) {
			return nil, nil, "", err
		}
		if err != nil {
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
