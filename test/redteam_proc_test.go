//go:build linux

package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/c", "mode": "ro"}}
	for _, kind := range []string{"shm", "sem", "msg"} {
		o, isErr := s.exec(map[string]any{"command": []string{"/mnt/c/sysvhold", kind, "256", "5"}, "memoryMb": 64, "timeoutMs": 30000, "mounts": mounts})
		if !isErr || !o.Killed || !strings.Contains(o.Stderr, "memory limit exceeded") {
			t.Errorf("%s: 256 MB under memoryMb 64: want a memory kill, got %+v (tool error %v)", kind, o, isErr)
		}
		o, isErr = s.exec(map[string]any{"command": []string{"/mnt/c/sysvhold", kind, "8", "0"}, "memoryMb": 64, "timeoutMs": 30000, "mounts": mounts})
		if isErr || o.code() != 0 || !strings.HasSuffix(o.Stdout, "survived\n") || strings.Contains(o.Stdout, "held 0 MB") {
			t.Errorf("%s: 8 MB under memoryMb 64: %+v (tool error %v)", kind, o, isErr)
		}
	}
}
