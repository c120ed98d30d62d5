package jail

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The kernel here may lack /proc/<pid>/task/<tid>/children
// (CONFIG_PROC_CHILDREN), so process trees are found by reading every
// /proc/<pid>/stat and following parent links.

type procInfo struct {
	pid, ppid, sid int
	state          byte
}

// dead is true for a process that has exited but is not reaped yet.
func (p procInfo) dead() bool { return p.state == 'Z' || p.state == 'X' }

func scanProcs() ([]procInfo, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	procs := make([]procInfo, 0, len(names))
	var buf [512]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid, buf[:]); ok {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// readStat parses /proc/<pid>/stat; false if the process is gone.
func readStat(pid int, buf []byte) (procInfo, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procInfo{}, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return procInfo{}, false
	}
	// "pid (comm) S ppid pgrp session ..."; comm may hold spaces and parens.
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procInfo{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	sid, err2 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, sid: sid, state: f[0][0]}, true
}

// treeOf returns the processes below root: those whose parent chain reaches
// root and, if bySession, those in root's session (root is a session leader,
// so this also finds descendants orphaned to init after root died, as long
// as root is not reaped and its pid cannot be reused).
func treeOf(root int, procs []procInfo, bySession bool) []procInfo {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	var out []procInfo
	for _, p := range procs {
		if p.pid == root {
			continue
		}
		in := bySession && p.sid == root
		// Parent chains are short; the bound guards against a cycle made of
		// pids reused between reads.
		for q, n := p.ppid, 0; !in && q > 1 && n < len(procs); q, n = parent[q], n+1 {
			in = q == root
		}
		if in {
			out = append(out, p)
		}
	}
	return out
}

// killRound sends SIGKILL to every live process below root and returns how
// many it found. A killed process cannot fork any more, and the children it
// forked before are reparented (to root, when root is a subreaper) and found
// by the next round.
func killRound(root int, bySession bool) (int, error) {
	procs, err := scanProcs()
	if err != nil {
		return 0, err
	}
	live := 0
	for _, p := range treeOf(root, procs, bySession) {
		if p.dead() {
			continue
		}
		live++
		if err := unix.Kill(p.pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			return live, fmt.Errorf("killing %d: %w", p.pid, err)
		}
	}
	return live, nil
}
