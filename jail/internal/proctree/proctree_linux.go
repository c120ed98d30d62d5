package proctree

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

// Proc is one process as its /proc/<pid>/stat gives it.
type Proc struct {
	Pid, PPid, Sid int
	State          byte
}

// Dead is true for a process that has exited but is not reaped yet.
func (p Proc) Dead() bool { return p.State == 'Z' || p.State == 'X' }

// Scan reads every process's stat.
func Scan() ([]Proc, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	procs := make([]Proc, 0, len(names))
	var buf [512]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := ReadStat(pid, buf[:]); ok {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// ReadStat parses /proc/<pid>/stat; false if the process is gone.
func ReadStat(pid int, buf []byte) (Proc, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Proc{}, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return Proc{}, false
	}
	// "pid (comm) S ppid pgrp session ..."; comm may hold spaces and parens.
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Proc{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 || len(f[0]) != 1 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	sid, err2 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil {
		return Proc{}, false
	}
	return Proc{Pid: pid, PPid: ppid, Sid: sid, State: f[0][0]}, true
}

// below returns the processes below root: those whose parent chain reaches
// root and, if bySession, those in root's session (root is a session leader,
// so this also finds descendants orphaned to init after root died, as long
// as root is not reaped and its pid cannot be reused).
func below(root int, procs []Proc, bySession bool) []Proc {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.Pid] = p.PPid
	}
	var out []Proc
	for _, p := range procs {
		if p.Pid == root {
			continue
		}
		in := bySession && p.Sid == root
		// Parent chains are short; the bound guards against a cycle made of
		// pids reused between reads.
		for q, n := p.PPid, 0; !in && q > 1 && n < len(procs); q, n = parent[q], n+1 {
			in = q == root
		}
		if in {
			out = append(out, p)
		}
	}
	return out
}

// KillRound sends SIGKILL to every live process below root and returns how
// many it found. A killed process cannot fork any more, and the children it
// forked before are reparented (to root, when root is a subreaper) and found
// by the next round.
func KillRound(root int, bySession bool) (int, error) {
	procs, err := Scan()
	if err != nil {
		return 0, err
	}
	live := 0
	for _, p := range below(root, procs, bySession) {
		if p.Dead() {
			continue
		}
		live++
		if err := unix.Kill(p.Pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			return live, fmt.Errorf("killing %d: %w", p.Pid, err)
		}
	}
	return live, nil
}
