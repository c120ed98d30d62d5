package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The baseline manifest, <storage>/<id>/baseline.manifest, records what a scan of the
// baseline would return, so status and sync scan only the working tree. The baseline
// is private and changes only through create and sync, which rewrite the manifest.
//
// It is a cache, never the truth: it is used only when its checksum is right and
// every baseline directory still has the inode, mtime and ctime it recorded. Any
// entry added, removed or renamed in the baseline changes its directory's times, so a
// manifest that missed a change fails that check and the baseline is scanned instead
// (and the manifest rewritten). Sync removes the manifest before it touches the
// baseline and writes the new one after, so a sync that stops part-way, or a crash,
// leaves no manifest rather than a stale one. The checksum also makes a torn write
// after a crash a cache miss, which is why the file is not fsynced on its own.
const (
	manifestName  = "baseline.manifest"
	manifestTemp  = "baseline.manifest.tmp"
	manifestMagic = "abxmf\x00\x00\x02" // format version in the last byte
)

// crcTable is made on first use: building it costs ~0.3 ms, and every autobox process
// (each JS worker among them) would pay that at start-up.
var crcTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// rootStamp identifies the baseline root directory and its last change.
type rootStamp struct {
	dev, ino     uint64
	mtime, ctime int64
}

func stampOf(st *unix.Stat_t) rootStamp {
	return rootStamp{uint64(st.Dev), uint64(st.Ino), st.Mtim.Nano(), st.Ctim.Nano()}
}

// encodeManifest lays the tree out listing by listing, directories in sorted order:
//
//	magic, root stamp, directory count,
//	per directory: path, entry count, per entry: name, mode, size, mtime,
//	               then ino and ctime (directories), ctime (files: see racy)
//	               or the target (links),
//	CRC-32C of everything before it.
func encodeManifest(root rootStamp, t tree) []byte {
	dirs := make([]string, 0, len(t))
	for d := range t {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	b := make([]byte, 0, 64+t.count()*32)
	b = append(b, manifestMagic...)
	b = binary.AppendUvarint(b, root.dev)
	b = binary.AppendUvarint(b, root.ino)
	b = binary.AppendVarint(b, root.mtime)
	b = binary.AppendVarint(b, root.ctime)
	b = binary.AppendUvarint(b, uint64(len(dirs)))
	appendString := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, d := range dirs {
		appendString(d)
		b = binary.AppendUvarint(b, uint64(len(t[d])))
		for _, c := range t[d] {
			e := c.e
			appendString(c.name)
			b = binary.AppendUvarint(b, uint64(e.typ|e.perm))
			b = binary.AppendVarint(b, e.size)
			b = binary.AppendVarint(b, e.mtime)
			switch e.typ {
			case unix.S_IFDIR:
				b = binary.AppendUvarint(b, e.ino)
				b = binary.AppendVarint(b, e.ctime)
			case unix.S_IFREG:
				b = binary.AppendVarint(b, e.ctime)
			case unix.S_IFLNK:
				appendString(e.link)
			}
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable()))
}

var errBadManifest = errors.New("malformed baseline manifest")

// uvarint is binary.Uvarint over a string.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1 // overflow
			}
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// manifestReader decodes with bounds checks; the first problem sticks in err.
type manifestReader struct {
	b   string
	err error
}

func (r *manifestReader) uvarint() uint64 {
	v, n := uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errBadManifest, ""
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *manifestReader) varint() int64 {
	ux := r.uvarint()
	v := int64(ux >> 1) // zig-zag, as binary.Varint
	if ux&1 != 0 {
		v = ^v
	}
	return v
}

// str returns the next length-prefixed string as a slice of the one string the
// whole manifest was converted to, so decoding allocates per listing, not per name.
func (r *manifestReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errBadManifest, ""
		return ""
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func decodeManifest(data []byte) (rootStamp, tree, error) {
	var root rootStamp
	if len(data) < len(manifestMagic)+4 || string(data[:len(manifestMagic)]) != manifestMagic {
		return root, nil, errBadManifest
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable()) != sum {
		return root, nil, fmt.Errorf("%w: checksum mismatch", errBadManifest)
	}
	r := &manifestReader{b: string(body[len(manifestMagic):])}
	root = rootStamp{r.uvarint(), r.uvarint(), r.varint(), r.varint()}
	ndirs := r.uvarint()
	if ndirs > uint64(len(r.b)) { // every listing takes bytes
		return root, nil, errBadManifest
	}
	t := make(tree, ndirs)
	for range ndirs {
		d := r.str()
		n := r.uvarint()
		if _, dup := t[d]; dup || n > uint64(len(r.b)) || d != "" && !cleanRel(d) {
			return root, nil, errBadManifest
		}
		l := make([]named, n)
		for i := range l {
			name := r.str()
			mode := r.uvarint()
			e := entry{typ: uint32(mode) & unix.S_IFMT, perm: uint32(mode) & 0o777, size: r.varint(), mtime: r.varint()}
			switch e.typ {
			case unix.S_IFDIR:
				e.ino, e.ctime = r.uvarint(), r.varint()
			case unix.S_IFREG:
				e.ctime = r.varint()
			case unix.S_IFLNK:
				e.link = r.str()
			}
			if r.err != nil || e.typ == 0 || mode != uint64(e.typ|e.perm) || !cleanRel(name) || strings.Contains(name, "/") ||
				i > 0 && l[i-1].name >= name {
				return root, nil, errBadManifest
			}
			l[i] = named{name, e}
		}
		t[d] = l
	}
	if r.err != nil || len(r.b) != 0 {
		return root, nil, errBadManifest
	}
	// The listings must form one tree: the root, and exactly one per directory entry.
	if _, ok := t[""]; !ok {
		return root, nil, errBadManifest
	}
	dirEntries := 0
	for d, l := range t {
		for _, c := range l {
			if c.e.isDir() {
				dirEntries++
				if _, ok := t[joinRel(d, c.name)]; !ok {
					return root, nil, errBadManifest
				}
			}
		}
	}
	if dirEntries != len(t)-1 {
		return root, nil, errBadManifest
	}
	return root, t, nil
}

// cleanRel reports whether p is a relative path of plain names: no empty, "." or ".."
// components.
func cleanRel(p string) bool {
	for {
		c, rest, more := strings.Cut(p, "/")
		if c == "" || c == "." || c == ".." {
			return false
		}
		if !more {
			return true
		}
		p = rest
	}
}

// readManifest returns the manifest's tree if it is intact and still describes the
// baseline; any error means "scan instead".
func readManifest(dir, base *root) (tree, error) {
	fd, err := unix.Openat(dir.fd, manifestName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dir.errorf("open", manifestName, err)
	}
	f := os.NewFile(uintptr(fd), manifestName)
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, dir.errorf("read", manifestName, err)
	}
	root, t, err := decodeManifest(data)
	if err != nil {
		return nil, err
	}
	if err := checkStamps(base, root, t); err != nil {
		return nil, err
	}
	return t, nil
}

var errStaleManifest = errors.New("baseline manifest is stale")

// checkStamps verifies that the baseline root and every directory the manifest lists
// are the same directories, unchanged since it was written. Intermediate components are
// resolved with fstatat, which would follow a symlink; but every such component is a
// directory in the manifest that is checked itself, with AT_SYMLINK_NOFOLLOW.
func checkStamps(base *root, want rootStamp, t tree) error {
	var st unix.Stat_t
	if err := unix.Fstat(base.fd, &st); err != nil {
		return base.errorf("fstat", "", err)
	}
	if stampOf(&st) != want {
		return fmt.Errorf("%w: baseline root changed", errStaleManifest)
	}
	for d, l := range t {
		for _, c := range l {
			if !c.e.isDir() {
				continue
			}
			p := joinRel(d, c.name)
			if err := unix.Fstatat(base.fd, p, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("%w: %s: %v", errStaleManifest, p, err)
			}
			if entryOf(&st) != c.e {
				return fmt.Errorf("%w: directory %s changed", errStaleManifest, p)
			}
		}
	}
	return nil
}

// writeManifest records t as the baseline's manifest: written to a temporary name and
// renamed over the old one, so a reader sees one whole manifest or the other.
func writeManifest(dir, base *root, t tree) error {
	var st unix.Stat_t
	if err := unix.Fstat(base.fd, &st); err != nil {
		return base.errorf("fstat", "", err)
	}
	data := encodeManifest(stampOf(&st), t)
	if err := unix.Unlinkat(dir.fd, manifestTemp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return dir.errorf("unlink", manifestTemp, err)
	}
	fd, err := createAt(dir.fd, manifestTemp, 0o600)
	if err != nil {
		return fmt.Errorf("writing baseline manifest: %w", err)
	}
	f := os.NewFile(uintptr(fd), manifestTemp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir.fd, manifestTemp, dir.fd, manifestName)
	}
	if err != nil {
		unix.Unlinkat(dir.fd, manifestTemp, 0)
		return fmt.Errorf("writing baseline manifest: %w", err)
	}
	return nil
}

// dropManifest removes the manifest before the baseline changes; see the comment on
// manifestName.
func dropManifest(dir *root) error {
	if err := unix.Unlinkat(dir.fd, manifestName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return dir.errorf("unlink", manifestName, err)
	}
	return nil
}

// loadBaseline returns the baseline tree, from the manifest when it is valid and from
// a scan otherwise; scanned reports the latter, so the caller can rewrite the manifest.
func loadBaseline(ctx context.Context, dir, base *root, ex excludes) (t tree, scanned bool, err error) {
	if t, err := readManifest(dir, base); err == nil {
		return t, false, nil
	}
	t, err = scan(ctx, base, ex)
	return t, true, err
}
