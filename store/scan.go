package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

// entry is what a scan records about one path: enough to decide "unchanged" from
// metadata alone in the common case.
type entry struct {
	typ   uint32 // st_mode & S_IFMT
	perm  uint32 // ordinary permission bits; special bits are not synchronized
	size  int64
	mtime int64 // nanoseconds
	link  string
}

func entryOf(st *unix.Stat_t) entry {
	return entry{
		typ:   uint32(st.Mode) & unix.S_IFMT,
		perm:  uint32(st.Mode) & 0o777,
		size:  st.Size,
		mtime: st.Mtim.Nano(),
	}
}

func (e entry) isDir() bool { return e.typ == unix.S_IFDIR }

// sameMeta reports whether two entries look identical without reading content.
// Directory sizes and times change with their entries and are not compared.
func sameMeta(a, b entry) bool {
	if a.typ != b.typ || a.perm != b.perm {
		return false
	}
	switch a.typ {
	case unix.S_IFREG:
		return a.size == b.size && a.mtime == b.mtime
	case unix.S_IFLNK:
		return a.link == b.link
	}
	return true
}

// typeName names a file type for messages.
func typeName(typ uint32) string {
	switch typ {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return fmt.Sprintf("file of type %#o", typ)
}

func supportedType(typ uint32) bool {
	return typ == unix.S_IFREG || typ == unix.S_IFDIR || typ == unix.S_IFLNK
}

// tree maps slash-separated relative paths to entries; the root itself is not included.
type tree map[string]entry

// hostStaging matches the sync staging directories autobox creates in a source root.
// Only this exact shape is treated as autobox's own, so a project file that merely
// starts with the prefix is neither ignored nor deleted.
var hostStaging = regexp.MustCompile(`^\.autobox-sync-[0-9a-f]{16}$`)

// skip reports whether a scan or copy leaves rel out: excluded paths and, at the top
// level, autobox's sync staging directories.
func skip(rel string, ex excludes) bool {
	if !strings.Contains(rel, "/") && hostStaging.MatchString(rel) {
		return true
	}
	return ex.match(rel)
}

// scan records every entry beneath r without following symlinks.
func scan(ctx context.Context, r *root, ex excludes) (tree, error) {
	fd, err := r.openDir("")
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	t := tree{}
	if err := scanDir(ctx, r, fd, "", ex, t); err != nil {
		return nil, err
	}
	return t, nil
}

func scanDir(ctx context.Context, r *root, fd int, rel string, ex excludes, t tree) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := readNames(fd)
	if err != nil {
		return r.errorf("readdir", rel, err)
	}
	for _, n := range names {
		p := path.Join(rel, n)
		if skip(p, ex) {
			continue
		}
		e, ok, err := lstatAt(fd, n)
		if err != nil {
			return r.errorf("lstat", p, err)
		}
		if !ok { // removed since readdir: absent, as a later scan would see it
			continue
		}
		t[p] = e
		if !e.isDir() {
			continue
		}
		cfd, err := unix.Openat(fd, n, openDirFlags, 0)
		if errors.Is(err, unix.ENOENT) {
			delete(t, p)
			continue
		}
		if err != nil {
			return r.errorf("open", p, err)
		}
		err = scanDir(ctx, r, cfd, p, ex, t)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// Action is a change kind as the seed names it.
type Action string

// Change actions.
const (
	ActionAdd     Action = "add"
	ActionModify  Action = "modify"
	ActionReplace Action = "replace" // the type changed (file, directory, symlink)
	ActionDelete  Action = "delete"
)

// compare says how b differs from a at rel ("" when equal). Content is read only when
// the metadata differs in a way that could still hide equal bytes.
func compare(a, b entry, aok, bok bool, ra, rb *root, rel string) (Action, error) {
	switch {
	case !aok && !bok:
		return "", nil
	case !aok:
		return ActionAdd, nil
	case !bok:
		return ActionDelete, nil
	case a.typ != b.typ:
		return ActionReplace, nil
	case sameMeta(a, b):
		return "", nil
	case a.typ != unix.S_IFREG || a.perm != b.perm || a.size != b.size:
		return ActionModify, nil
	}
	same, err := sameContent(ra, rb, rel)
	if err != nil || same {
		return "", err
	}
	return ActionModify, nil
}

// diff lists how tree to differs from tree from, per path (no collapsing).
func diff(from, to tree, rf, rt *root) (map[string]Action, error) {
	out := map[string]Action{}
	for p, a := range from {
		b, ok := to[p]
		act, err := compare(a, b, true, ok, rf, rt, p)
		if err != nil {
			return nil, err
		}
		if act != "" {
			out[p] = act
		}
	}
	for p := range to {
		if _, ok := from[p]; !ok {
			out[p] = ActionAdd
		}
	}
	return out, nil
}

func sameContent(ra, rb *root, rel string) (bool, error) {
	fa, err := ra.openFile(rel)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := rb.openFile(rel)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	bufA, bufB := make([]byte, 128<<10), make([]byte, 128<<10)
	for {
		na, errA := io.ReadFull(fa, bufA)
		nb, errB := io.ReadFull(fb, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		doneA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		doneB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		if errA != nil && !doneA {
			return false, fmt.Errorf("reading %s: %w", fa.Name(), errA)
		}
		if errB != nil && !doneB {
			return false, fmt.Errorf("reading %s: %w", fb.Name(), errB)
		}
		if doneA || doneB {
			return doneA && doneB, nil
		}
	}
}

// excludes are normalized relative paths whose subtrees are neither copied nor synced.
type excludes []string

// parseExcludes validates and normalizes create's excludes: exact relative paths, no
// globs, no "..", no absolute paths, no empty entries; duplicates are dropped.
func parseExcludes(in []string) (excludes, error) {
	seen := map[string]bool{}
	var out excludes
	for _, raw := range in {
		switch {
		case strings.TrimSpace(raw) == "":
			return nil, invalidf("excludes: empty entry")
		case strings.ContainsAny(raw, "*?[") || strings.ContainsRune(raw, 0):
			return nil, invalidf("excludes: %q: glob characters are not expanded; list exact relative paths", raw)
		case path.IsAbs(raw):
			return nil, invalidf("excludes: %q: must be relative to hostPath", raw)
		}
		for _, c := range strings.Split(raw, "/") {
			if c == ".." {
				return nil, invalidf("excludes: %q: \"..\" is not allowed", raw)
			}
		}
		p := path.Clean(raw)
		if p == "." {
			return nil, invalidf("excludes: %q names the whole source", raw)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// match reports whether rel is an excluded path or lies beneath one.
func (ex excludes) match(rel string) bool {
	for _, e := range ex {
		if rel == e || strings.HasPrefix(rel, e+"/") {
			return true
		}
	}
	return false
}

// under returns an excluded path strictly beneath directory rel, if any.
func (ex excludes) under(rel string) (string, bool) {
	for _, e := range ex {
		if strings.HasPrefix(e, rel+"/") {
			return e, true
		}
	}
	return "", false
}

// parentOf returns rel's parent ("" at the top level).
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// ancestors calls fn for each proper ancestor of rel, nearest first, until fn is true.
func ancestors(rel string, fn func(a string) bool) {
	for a := parentOf(rel); a != ""; a = parentOf(a) {
		if fn(a) {
			return
		}
	}
}
