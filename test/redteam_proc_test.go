//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Red-team tests of the process, kernel-interface and network promises of
// SECURITY.md ("Modes on Linux", "exec_command", "Network by host"): each is an
// attack a hostile command makes, with the same action, allowed, as its
// positive control. They run in the mode of the user who runs them (root:
// namespaces; an ordinary user: user-namespaces).

// cProgram compiles src with the host's gcc into a directory of its own, to be
// mounted read-only into commands, or skips the test naming what is missing.
func cProgram(t *testing.T, name, src string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc on this machine: the attack is a C program")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // commands run as another uid where a root server drops to one
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O2", "-o", filepath.Join(dir, name), c).CombinedOutput(); err != nil {
		t.Skipf("gcc cannot build a program here: %v: %s", err, out)
	}
	return dir
}

// run64 runs the program dir/argv[0] (mounted read-only at /mnt/c) under
// memoryMb 64.
func run64(s *session, dir string, argv ...string) (execOut, bool) {
	argv[0] = "/mnt/c/" + argv[0]
	return s.exec(map[string]any{"command": argv, "memoryMb": 64, "timeoutMs": 30000,
		"mounts": []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/c", "mode": "ro"}}})
}

// wantMemoryKill checks that a call ended as a memory kill.
func wantMemoryKill(t *testing.T, what string, o execOut, isErr bool) {
	t.Helper()
	if !isErr || !o.Killed || !strings.Contains(o.Stderr, "memory limit exceeded") {
		t.Errorf("%s under memoryMb 64: want a memory kill, got %+v (tool error %v)", what, o, isErr)
	}
}

// sysvHold holds memory in System V objects of one kind, which no process maps:
// shm (segments filled and detached), sem (semaphore arrays) or msg (queued
// messages). It prints how much it holds, then sleeps.
const sysvHold = `#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/sem.h>
#include <sys/msg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

/* sysvhold KIND MB SECS */
int main(int argc, char **argv) {
	const char *kind = argv[1];
	long want = atol(argv[2]) << 20, held = 0;
	if (!strcmp(kind, "shm")) {
		for (; held < want; held += 4 << 20) {
			int id = shmget(IPC_PRIVATE, 4 << 20, IPC_CREAT | 0600);
			char *p = id < 0 ? (char *)-1 : shmat(id, 0, 0);
			if (p == (char *)-1) { perror("shm"); break; }
			memset(p, 1, 4 << 20);
			shmdt(p);
		}
	} else if (!strcmp(kind, "sem")) {
		/* 32000 semaphores of at least 64 bytes: 2 MB an array */
		for (; held < want; held += 32000 * 64)
			if (semget(IPC_PRIVATE, 32000, IPC_CREAT | 0600) < 0) { perror("semget"); break; }
	} else {
		static struct { long type; char text[8000]; } m = {1};
		for (int q = -1, n = 0; held < want; held += sizeof m.text, n++) {
			if (n % 2 == 0 && (q = msgget(IPC_PRIVATE, IPC_CREAT | 0600)) < 0) { perror("msgget"); break; }
			if (msgsnd(q, &m, sizeof m.text, IPC_NOWAIT) < 0) { perror("msgsnd"); break; }
		}
	}
	printf("held %ld MB\n", held >> 20);
	fflush(stdout);
	sleep(atoi(argv[3]));
	printf("survived\n");
	return 0;
}
`

// TestRedteamSysVMemory: System V objects hold memory of the call's IPC
// namespace that no process maps (a detached segment, semaphore arrays,
// queued messages), and the namespace's default limits let them hold tens of
// gigabytes. Past memoryMb each ends the call as a memory kill, whether a
// memory cgroup or the watchdog sees it; well under it, the same runs to its
// end.
func TestRedteamSysVMemory(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("without namespaces System V objects are the host's (SECURITY.md, what is not enforced)")
	}
	dir := cProgram(t, "sysvhold", sysvHold)
	s := start(t)
	for _, kind := range []string{"shm", "sem", "msg"} {
		o, isErr := run64(s, dir, "sysvhold", kind, "256", "5")
		wantMemoryKill(t, kind+": 256 MB", o, isErr)
		o, isErr = run64(s, dir, "sysvhold", kind, "8", "0")
		if isErr || o.code() != 0 || !strings.HasSuffix(o.Stdout, "survived\n") || strings.Contains(o.Stdout, "held 0 MB") {
			t.Errorf("%s: 8 MB under memoryMb 64: %+v (tool error %v)", kind, o, isErr)
		}
	}
}

// secretHold forks N processes that each map MB of a memfd_secret (secret) or
// memfd_create (memfd) file and touch it, then sleep SECS. It prints what
// failed, or "held" once every child holds its share.
const secretHold = `#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* secrethold KIND N MB SECS */
int main(int argc, char **argv) {
	int n = atoi(argv[2]), secs = atoi(argv[4]), pipefd[2];
	long size = atol(argv[3]) << 20;
	if (pipe(pipefd)) return 2;
	for (int i = 0; i < n; i++) {
		if (fork() == 0) {
			int fd = strcmp(argv[1], "secret") ? memfd_create("m", 0) : syscall(447, 0);
			if (fd < 0) { printf("%s: %s\n", argv[1], strerror(errno)); fflush(stdout); _exit(1); }
			if (ftruncate(fd, size)) { perror("ftruncate"); _exit(1); }
			char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (p == MAP_FAILED) { perror("mmap"); _exit(1); }
			memset(p, 1, size);
			write(pipefd[1], "x", 1);
			sleep(secs);
			_exit(0);
		}
	}
	close(pipefd[1]);
	char c;
	int held = 0;
	while (read(pipefd[0], &c, 1) == 1) held++;
	while (wait(0) > 0) {}
	if (held == n) printf("held\n");
	return held == n ? 0 : 1;
}
`

// TestRedteamSecretMemory: memfd_secret's pages are in no count of anonymous
// or shared memory (/proc shows them as file pages), so 16 processes held 128
// MB under memoryMb 64 where no memory cgroup counts them. memfd_secret is
// unavailable to commands (ENOSYS, as on a kernel without it); the same
// memory in ordinary memfds is held to memoryMb, and under it runs.
func TestRedteamSecretMemory(t *testing.T) {
	requireSandbox(t)
	if fd, _, e := unix.Syscall(unix.SYS_MEMFD_SECRET, 0, 0, 0); e != 0 {
		t.Skipf("this kernel offers no memfd_secret (%v): nothing to attack", e)
	} else {
		unix.Close(int(fd))
	}
	dir := cProgram(t, "secrethold", secretHold)
	s := start(t)
	run := func(kind, n, mb string) (execOut, bool) { return run64(s, dir, "secrethold", kind, n, mb, "3") }
	if o, isErr := run("secret", "16", "8"); isErr || !strings.Contains(o.Stdout, "secret: Function not implemented") || strings.Contains(o.Stdout, "held") {
		t.Errorf("memfd_secret: want ENOSYS, got %+v (tool error %v)", o, isErr)
	}
	o, isErr := run("memfd", "16", "8")
	wantMemoryKill(t, "128 MB of memfds", o, isErr)
	if o, isErr := run("memfd", "2", "8"); isErr || o.code() != 0 || o.Stdout != "held\n" {
		t.Errorf("16 MB of memfds under memoryMb 64: %+v (tool error %v)", o, isErr)
	}
}

// pteHold makes the kernel hold MB of page tables for it and no page of its
// own: it reads one byte of every 2 MB of a mapping, which maps the zero page
// and needs a 4 KB table for each 2 MB. It prints its figures, then sleeps.
const pteHold = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/* ptehold MB SECS */
int main(int argc, char **argv) {
	long tables = atol(argv[1]) << 8;
	char *p = mmap(0, tables << 21, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) { perror("mmap"); return 1; }
	volatile char sum = 0;
	for (long i = 0; i < tables; i++) sum += p[i << 21];
	printf("tables held\n");
	fflush(stdout);
	sleep(atoi(argv[2]));
	printf("survived\n");
	return 0;
}
`

// TestRedteamPageTables: page tables are kernel memory a process holds, in no
// Rss line of its /proc status: 256 MB of them, mapping only the zero page,
// ran to its end under memoryMb 64 where no memory cgroup counts them. Past
// memoryMb they end the call as a memory kill; 16 MB of them run.
func TestRedteamPageTables(t *testing.T) {
	requireSandbox(t)
	dir := cProgram(t, "ptehold", pteHold)
	s := start(t)
	o, isErr := run64(s, dir, "ptehold", "256", "5")
	wantMemoryKill(t, "256 MB of page tables", o, isErr)
	o, isErr = run64(s, dir, "ptehold", "16", "0")
	if isErr || o.code() != 0 || o.Stdout != "tables held\nsurvived\n" {
		t.Errorf("16 MB of page tables under memoryMb 64: %+v (tool error %v)", o, isErr)
	}
}

// TestRedteamHiddenWriter: a program its user cannot read (mode 0111) runs
// not dumpable, and an ordinary user's watchdog could not read its bytes
// written, nor those of the children it reaps: a shell copied and made
// execute-only wrote 360 MB in children of 60 MB under maxWriteMb 64. Such a
// tree ends the call at the disk limit (as root, which reads them, by its
// count); the same shell, readable, writing 8 MB runs.
func TestRedteamHiddenWriter(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	script := func(mode string, files int, size string) []string {
		return bash(fmt.Sprintf(`cp /bin/bash "$HOME/sh" && chmod %s "$HOME/sh" && "$HOME/sh" -c 'for i in $(seq %d); do head -c %s /dev/zero > "$HOME/f$i"; done; echo survived'`, mode, files, size))
	}
	o, isErr := s.exec(map[string]any{"command": script("111", 6, "60M"), "maxWriteMb": 64, "timeoutMs": 30000})
	if !isErr || !o.Killed || !strings.HasPrefix(o.Stderr, "disk limit exceeded") || strings.Contains(o.Stdout, "survived") {
		t.Errorf("an execute-only shell's children writing 360 MB under maxWriteMb 64: want a disk limit kill, got %+v (tool error %v)", o, isErr)
	}
	o, isErr = s.exec(map[string]any{"command": script("755", 1, "8M"), "maxWriteMb": 64, "timeoutMs": 30000})
	if isErr || o.code() != 0 || o.Stdout != "survived\n" {
		t.Errorf("a readable shell writing 8 MB under maxWriteMb 64: %+v (tool error %v)", o, isErr)
	}
}
