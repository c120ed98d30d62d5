// Package procfs reads the small "key value" files of Linux's /proc and cgroupfs
// (/proc/<pid>/io, memory.stat) without allocating for each.
package procfs

import (
	"bytes"
	"strconv"
)

// LineValue reads the number after key at the start of a line of b, as in
// /proc/<pid>/io ("write_bytes: 123") or memory.stat ("shmem 123"); 0 if none.
func LineValue(b []byte, key string) int64 {
	i := 0
	if !bytes.HasPrefix(b, []byte(key)) {
		if i = bytes.Index(b, []byte("\n"+key)); i < 0 {
			return 0
		}
		i++
	}
	rest := b[i+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	v, _ := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
	return v
}

// Written is the bytes a process wrote, from its /proc/<pid>/io: what it dirtied
// in the page cache less what it truncated before it reached the disk, its reaped
// children's included.
func Written(io []byte) int64 {
	return LineValue(io, "write_bytes: ") - LineValue(io, "cancelled_write_bytes: ")
}
