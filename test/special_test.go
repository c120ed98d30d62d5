package test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// special is a file that a server touching it carelessly would block on, read forever
// or fail on obscurely.
type special struct {
	name   string // beneath the mount
	kind   string // what an error about it must say
	make   func(t *testing.T, p string)
	copied bool // copy_then_sync copies it (links are copied as links, loops too)
}

func specials(t *testing.T) []special {
	all := []special{
		{"fifo", "FIFO", func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o644)) }, false},
		{"sock", "socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			must(t, err)
			t.Cleanup(func() { l.Close() })
		}, false},
		// Reading a /dev/zero of the mount's own would never end.
		{"zero", "character device", func(t *testing.T, p string) {
			must(t, syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|5))
		}, false},
		{"loop", "too many levels of symbolic links", func(t *testing.T, p string) {
			must(t, os.Symlink(filepath.Base(p)+".2", p))
			must(t, os.Symlink(filepath.Base(p), p+".2"))
		}, true},
	}
	if os.Geteuid() != 0 {
		t.Logf("no device case: mknod needs root")
		all = append(all[:2], all[3])
	}
	return all
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serverFds counts the server's open descriptors.
func serverFds(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	must(t, err)
	return len(entries)
}

// settledFds waits for the pools to refill and the clean-ups after calls to finish,
// then counts the server's descriptors, taking the lowest of a few looks.
func settledFds(t *testing.T, pid int) int {
	fds := 1 << 30
	for range 5 {
		time.Sleep(300 * time.Millisecond)
		fds = min(fds, serverFds(t, pid))
	}
	return fds
}

// fifoWaiters lists the threads of process pid that sleep in the kernel waiting
// for a FIFO's other end: an open of a FIFO nobody opens the other way never
// returns, and each such call would keep a thread of the server for good. (How
// many threads the server has says nothing: the Go runtime starts more on a busy
// machine and keeps them.)
func fifoWaiters(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	must(t, err)
	var stuck []string
	for _, task := range tasks {
		wchan, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name()))
		if err == nil && string(wchan) == "wait_for_partner" {
			stuck = append(stuck, task.Name())
		}
	}
	return stuck
}

// requireFifoWaitersSeen is fifoWaiters' positive control: a thread of this test
// process opening a FIFO with no writer is seen waiting, until a writer comes.
func requireFifoWaitersSeen(t *testing.T) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "control")
	must(t, syscall.Mkfifo(fifo, 0o600))
	opened := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo) // blocks its thread until the writer below opens
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	seen := false
	for deadline := time.Now().Add(30 * time.Second); !seen && time.Now().Before(deadline); {
		seen = len(fifoWaiters(t, os.Getpid())) > 0
		time.Sleep(20 * time.Millisecond)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	must(t, err)
	w.Close()
	must(t, <-opened)
	if !seen {
		t.Fatal("a thread of this process blocked opening a FIFO was not seen in /proc/<pid>/task/*/wchan: the check of the server's threads cannot be made here")
	}
}

// TestSpecialFiles drives every bridge verb and every tool at a FIFO, a socket, a
// device, a directory nobody may enter and a symlink loop inside a mount, and gives
// them as mounts, cwd and copy sources: each call is answered before its deadline
// with an error that names the path and says what it is (not a TimeoutError), and
// after many such calls no thread of the server waits on a FIFO and it holds no more
// descriptors than after the same calls on ordinary files.
func TestSpecialFiles(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	pid := s.cmd.Process.Pid
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "file.txt"), "data")
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	kinds := specials(t)
	for _, k := range kinds {
		k.make(t, filepath.Join(dir, k.name))
	}
	locked := filepath.Join(dir, "locked")
	writeFile(t, filepath.Join(locked, "f"), "secret")
	must(t, os.Chmod(locked, 0))
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "rw"}}
	// Each tree for copy_then_sync holds one special file beside an ordinary one.
	trees := map[string]string{}
	for _, k := range kinds {
		tree := t.TempDir()
		writeFile(t, filepath.Join(tree, "ok.txt"), "fine")
		must(t, os.Mkdir(filepath.Join(tree, "in"), 0o755))
		k.make(t, filepath.Join(tree, "in", k.name))
		trees[k.name] = tree
	}
	plain := t.TempDir()
	writeFile(t, filepath.Join(plain, "ok.txt"), "fine")

	jsCalls := func(p string) map[string]string {
		return map[string]string{
			"readFile":  fmt.Sprintf("host.readFile(%q)", p),
			"writeFile": fmt.Sprintf("host.writeFile(%q, 'x')", p),
			"listDir":   fmt.Sprintf("host.listDir(%q)", p),
		}
	}
	// Positive controls, and the warm-up the counts start from: the same calls on an
	// ordinary file and directory.
	controls := func() {
		s.mustJS(map[string]any{"code": "host.readFile('/mnt/d/file.txt')", "mounts": mounts, "timeoutMs": 3000})
		s.mustJS(map[string]any{"code": "host.writeFile('/mnt/d/file.txt', 'data')", "mounts": mounts, "timeoutMs": 3000})
		s.mustJS(map[string]any{"code": "host.listDir('/mnt/d/sub')", "mounts": mounts, "timeoutMs": 3000})
		sub := []map[string]any{{"hostPath": filepath.Join(dir, "sub"), "sandboxPath": "/mnt/s"}}
		s.mustJS(map[string]any{"code": "host.listDir('/mnt/s')", "mounts": sub})
		if o, isErr := s.exec(map[string]any{"command": []string{"true"}, "mounts": mounts, "cwd": "/mnt/d/sub"}); isErr || o.code() != 0 {
			t.Fatalf("exec_command with cwd /mnt/d/sub: %+v", o)
		}
		o, isErr := s.ws(map[string]any{"action": "create", "hostPath": plain, "sandboxPath": "/mnt/p", "copyMode": "auto"})
		if isErr || o.WorkspaceID == "" {
			t.Fatalf("copy_then_sync create of an ordinary tree: %+v", o)
		}
		s.ws(map[string]any{"action": "discard", "workspaceId": o.WorkspaceID})
	}
	round := func() {
		for _, k := range kinds {
			p := "/mnt/d/" + k.name
			for verb, code := range jsCalls(p) {
				o, isErr := s.js(map[string]any{"code": code, "mounts": mounts, "timeoutMs": 3000})
				if !isErr || !strings.HasPrefix(o.err(), "Error: "+verb+": "+p+": ") || !strings.Contains(o.err(), k.kind) {
					t.Errorf("execute_js %s: got %q, want an error naming %s and %q", code, o.err(), p, k.kind)
				}
			}
			host := filepath.Join(dir, k.name)
			// The server itself looks at mounts, cwd and copy sources.
			for _, tool := range []string{"execute_js", "exec_command"} {
				args := map[string]any{"mounts": []map[string]any{{"hostPath": host, "sandboxPath": "/mnt/x"}}}
				if tool == "execute_js" {
					args["code"] = "1"
				} else {
					args["command"] = []string{"true"}
				}
				res := s.callRaw(tool, args)
				if text := textOf(res); !res.IsError || !strings.Contains(text, "mounts[0]") {
					t.Errorf("%s with a %s as a mount: got %q, want an error naming mounts[0]", tool, k.kind, text)
				}
			}
			res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "mounts": mounts, "cwd": p})
			if text := textOf(res); !res.IsError || !strings.Contains(text, "cwd") {
				t.Errorf("exec_command with cwd %s: got %q, want an error about cwd", p, text)
			}
			res = s.callRaw("copy_then_sync", map[string]any{"action": "create", "hostPath": host, "sandboxPath": "/mnt/p", "copyMode": "auto"})
			if text := textOf(res); !res.IsError || !strings.Contains(text, "hostPath") {
				t.Errorf("copy_then_sync create of a %s: got %q, want an error about hostPath", k.kind, text)
			}
			res = s.callRaw("copy_then_sync", map[string]any{"action": "create", "hostPath": trees[k.name], "sandboxPath": "/mnt/p", "copyMode": "auto"})
			text := textOf(res)
			switch {
			case k.copied && res.IsError:
				t.Errorf("copy_then_sync create of a tree holding a %s (copied as a link): %s", k.name, text)
			case k.copied:
				var o wsOut
				must(t, json.Unmarshal([]byte(text), &o))
				s.ws(map[string]any{"action": "discard", "workspaceId": o.WorkspaceID})
			case !res.IsError || !strings.Contains(text, "in/"+k.name) || !strings.Contains(text, k.kind):
				t.Errorf("copy_then_sync create of a tree holding a %s: got %q, want an error naming in/%s", k.kind, text, k.name)
			}
		}
		// A directory nobody may enter: closed to the bridge as to a command, even
		// though the server runs as root.
		for verb, code := range map[string]string{
			"listDir":   "host.listDir('/mnt/d/locked')",
			"readFile":  "host.readFile('/mnt/d/locked/f')",
			"writeFile": "host.writeFile('/mnt/d/locked/g', 'x')",
		} {
			o, isErr := s.js(map[string]any{"code": code, "mounts": mounts, "timeoutMs": 3000})
			if !isErr || !strings.HasPrefix(o.err(), "Error: "+verb+": /mnt/d/locked") || !strings.HasSuffix(o.err(), ": permission denied") {
				t.Errorf("execute_js %s: got %q, want permission denied naming the path", code, o.err())
			}
		}
		// A command cannot enter it either; how it says so is the command's.
		if res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "mounts": mounts, "cwd": "/mnt/d/locked"}); !res.IsError {
			t.Errorf("exec_command with cwd in a mode-0 directory succeeded: %s", textOf(res))
		}
	}

	requireFifoWaitersSeen(t)
	controls()
	fds := settledFds(t, pid)
	for range 3 {
		round()
		controls()
	}
	fdsAfter := settledFds(t, pid)
	t.Logf("server: fds %d -> %d", fds, fdsAfter)
	if stuck := fifoWaiters(t, pid); len(stuck) > 0 {
		t.Errorf("server threads %v wait for a FIFO's other end after calls at special files", stuck)
	}
	if fdsAfter > fds+4 {
		t.Errorf("server fds grew from %d to %d over 3 rounds of calls at special files", fds, fdsAfter)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", err)
	}
}
