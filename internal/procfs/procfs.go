// Package procfs reads the small "key value" files of Linux's /proc and cgroupfs
// (/proc/<pid>/io, memory.stat) without allocating for each.
package procfs

import (
	"bytes"
	"strconv"
)

// LineValue reads the number after key at the start of a line of b, as in
// /proc/<pid>/io ("write_bytes: 123"), /proc/<pid>/status ("RssAnon:  12 kB", in
// the unit the file gives) or memory.stat ("shmem 123"); 0 if none.
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
	f := bytes.Fields(rest) // "123", or "123 kB" in /proc/<pid>/status
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return v
}

// Resident is the memory a process holds of its own, from its /proc/<pid>/status:
// anonymous pages and shared memory (tmpfs, memfd, SysV), and its page tables
// (VmPTE), not the pages of files it maps (its program and libraries, which every
// process running them shares). Page tables are the kernel's memory, in no Rss
// line: a process that reads one byte of every 2 MB of a large mapping holds a
// 4 KB table for each and no page of its own (the zero page), 256 MB of them in
// a few seconds.
func Resident(status []byte) int64 {
	return (LineValue(status, "RssAnon:") + LineValue(status, "RssShmem:") + LineValue(status, "VmPTE:")) << 10
}

// Written is the bytes a process wrote, from its /proc/<pid>/io: what it dirtied
// in the page cache less what it truncated before it reached the disk, its reaped
// children's included.
func Written(io []byte) int64 {
	return LineValue(io, "write_bytes: ") - LineValue(io, "cancelled_write_bytes: ")
}
