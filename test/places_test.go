//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountsAtSandboxPath: where the command has a root of its own, each mount
// is bound at its sandboxPath and the command runs with the paths as given: pwd,
// ls of the parent, a traceback and a file the command writes name the
// sandboxPath, never the host path; a workspace likewise. Without namespaces
// the paths are rewritten to host paths, and the result says which.
func TestMountsAtSandboxPath(t *testing.T) {
	python, _ := exec.LookPath("python3")
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		host := compatDir(t) // a root server without namespaces runs commands as nobody
		writeFile(t, filepath.Join(host, "sub", "boom.py"), "def f():\n    raise ValueError('boom')\nf()\n")
		os.Chmod(filepath.Join(host, "sub"), 0o777)
		mounts := []map[string]any{{"hostPath": host, "sandboxPath": "/mnt/p", "mode": "rw"}}
		want, other := "bound at sandboxPath", "rewritten to hostPath"
		if !m.ns {
			want, other = other, want
		}
		run := func(cwd string, argv ...string) execOut {
			t.Helper()
			args := map[string]any{"command": argv, "mounts": mounts}
			if cwd != "" {
				args["cwd"] = cwd
			}
			o, isErr := s.exec(args)
			if isErr || o.ExitCode == nil || *o.ExitCode != 0 {
				t.Fatalf("%v: isError %v, %+v", argv, isErr, o)
			}
			if o.MountPaths != want {
				t.Errorf("%v: mountPaths %q, want %q (not %q)", argv, o.MountPaths, want, other)
			}
			return o
		}
		// A session's answer says it too.
		// (no output: the first answer waits for the end)
		if o, _ := s.exec(map[string]any{"command": []string{"true"}, "mounts": mounts, "yieldMs": 30000}); o.MountPaths != want {
			t.Errorf("a session's answer: mountPaths %q, want %q: %+v", o.MountPaths, want, o)
		}
		// Relative and absolute paths, from a cwd in the mount.
		o := run("/mnt/p/sub", "sh", "-c", "pwd; cat ./boom.py /mnt/p/sub/boom.py | wc -l; echo \"$PWD\" > where.txt")
		wantPwd := "/mnt/p/sub"
		if !m.ns {
			wantPwd = filepath.Join(host, "sub")
		}
		if lines := strings.Fields(o.Stdout); len(lines) != 2 || lines[0] != wantPwd || lines[1] != "6" {
			t.Errorf("pwd and line count: %q, want %s and 6", o.Stdout, wantPwd)
		}
		if got, _ := os.ReadFile(filepath.Join(host, "sub", "where.txt")); strings.TrimSpace(string(got)) != wantPwd {
			t.Errorf("the file the command wrote says %q, want %s", got, wantPwd)
		}
		if m.ns {
			// The parent is a directory of the root's own, listing the mount.
			if o := run("", "ls", "/mnt"); strings.TrimSpace(o.Stdout) != "p" {
				t.Errorf("ls /mnt: %q, want p", o.Stdout)
			}
			// The host path is not there at all: one name per file.
			if o, _ := s.exec(map[string]any{"command": []string{"ls", host}, "mounts": mounts}); o.ExitCode == nil || *o.ExitCode == 0 {
				t.Errorf("ls of the host path %s worked: %+v", host, o)
			}
			// A model that names the host path is told where the command sees it.
			o, _ := s.exec(map[string]any{"command": []string{"cat", filepath.Join(host, "sub", "boom.py")}, "mounts": mounts})
			if wantNote := filepath.Join(host, "sub", "boom.py") + " is at /mnt/p/sub/boom.py"; !strings.Contains(o.Stderr, wantNote) || !strings.Contains(o.Stderr, "not at its hostPath") {
				t.Errorf("cat of the host path: no note saying %q:\n%s", wantNote, o.Stderr)
			}
			// Positive control of that: the same ls of the sandboxPath works.
			run("", "ls", "/mnt/p")
		}
		if python != "" {
			args := map[string]any{"command": []string{"python3", "/mnt/p/sub/boom.py"}, "mounts": mounts}
			o, _ := s.exec(args)
			wantFile := "/mnt/p/sub/boom.py"
			if !m.ns {
				wantFile = filepath.Join(host, "sub", "boom.py")
			}
			if !strings.Contains(o.Stderr, `File "`+wantFile+`"`) || !strings.Contains(o.Stderr, "ValueError: boom") {
				t.Errorf("traceback does not name %s: %q", wantFile, o.Stderr)
			}
		}

		// A workspace, mounted by id at its sandboxPath.
		src := t.TempDir()
		writeFile(t, filepath.Join(src, "a.txt"), "hello\n")
		c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/ws", "copyMode": "auto"})
		if isErr {
			t.Fatalf("create: %+v", c)
		}
		wsMounts := []map[string]any{{"workspaceId": c.WorkspaceID}}
		var wo execOut
		if s.call("exec_command", map[string]any{"command": []string{"sh", "-c", "pwd; cat a.txt; pwd > b.txt"}, "cwd": "/mnt/ws", "mounts": wsMounts}, &wo) || wo.ExitCode == nil || *wo.ExitCode != 0 {
			t.Fatalf("exec in the workspace: %+v", wo)
		}
		if m.ns && wo.Stdout != "/mnt/ws\nhello\n" {
			t.Errorf("workspace: %q, want /mnt/ws and hello", wo.Stdout)
		}
		if !m.ns && (!strings.HasSuffix(wo.Stdout, "\nhello\n") || strings.HasPrefix(wo.Stdout, "/mnt/ws")) {
			t.Errorf("workspace without namespaces: %q, want its host path and hello", wo.Stdout)
		}
		if wo.MountPaths != want {
			t.Errorf("workspace: mountPaths %q, want %q", wo.MountPaths, want)
		}
	})
}

// TestMountPlacesRefused: a sandboxPath that would hide, or be hidden by, a
// path every command has is refused in every mode, naming sandboxPath; one of
// its own beside them works.
func TestMountPlacesRefused(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		host := t.TempDir()
		for _, at := range []string{"/etc", "/usr/local/x", "/tmp/x", "/proc/x", "/dev/x", "/lib64/x", "/bin", "/.autobox-host", "/run/x"} {
			res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "mounts": []map[string]any{{"hostPath": host, "sandboxPath": at}}})
			if txt := textOf(res); !res.IsError || !strings.Contains(txt, "sandboxPath "+at+" overlaps") {
				t.Errorf("sandboxPath %s: isError %v, %s", at, res.IsError, txt)
			}
		}
		// Nested sandbox paths, "..", and a path too long.
		for at, why := range map[string]string{"/mnt/a/b": "nested", "/mnt/../etc": `contains`, "/mnt/" + strings.Repeat("x", 300): "at most 255"} {
			res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "mounts": []map[string]any{{"hostPath": host, "sandboxPath": "/mnt/a"}, {"hostPath": t.TempDir(), "sandboxPath": at}}})
			if txt := textOf(res); !res.IsError || !strings.Contains(txt, why) {
				t.Errorf("sandboxPath %.40s: isError %v, %s", at, res.IsError, txt)
			}
		}
		// Positive control: places of their own, at depth, side by side.
		o, isErr := s.exec(map[string]any{"command": []string{"true"}, "mounts": []map[string]any{{"hostPath": host, "sandboxPath": "/srv/deep/a"}, {"hostPath": t.TempDir(), "sandboxPath": "/srv/deep/b"}}})
		if isErr || o.ExitCode == nil || *o.ExitCode != 0 {
			t.Errorf("places of their own: %+v", o)
		}
	})
}

// TestMountPlacesHostile: a command cannot unmount, cover or write through
// its read-only mount at its place, nor write the root's own directories
// around it; the read-write mount beside it is writable (positive control).
func TestMountPlacesHostile(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		if !m.ns {
			t.Skip("places exist only with a private root")
		}
		ro, rw := compatDir(t), compatDir(t)
		writeFile(t, filepath.Join(ro, "keep.txt"), "kept\n")
		mounts := []map[string]any{{"hostPath": ro, "sandboxPath": "/mnt/r", "mode": "ro"}, {"hostPath": rw, "sandboxPath": "/mnt/w", "mode": "rw"}}
		script := `umount /mnt/r 2>/dev/null && echo UNMOUNTED; umount -l /mnt/r 2>/dev/null && echo UNMOUNTED-LAZY
mount --bind /mnt/w /mnt/r 2>/dev/null && echo COVERED
mount -o remount,rw /mnt/r 2>/dev/null && echo REMOUNTED
echo x > /mnt/r/keep.txt 2>/dev/null && echo WROTE-RO; touch /mnt/r/new 2>/dev/null && echo MADE-RO
mkdir /mnt/other 2>/dev/null && echo MKDIR-PARENT; rmdir /mnt/w 2>/dev/null && echo RMDIR-PLACE; mv /mnt/r /mnt/q 2>/dev/null && echo MOVED
chmod 777 /mnt 2>/dev/null && echo CHMOD-PARENT
cat /mnt/r/keep.txt; echo ok > /mnt/w/made.txt && echo rw-ok`
		o, isErr := s.exec(map[string]any{"command": []string{"sh", "-c", script}, "mounts": mounts})
		if isErr || o.Stdout != "kept\nrw-ok\n" {
			t.Errorf("hostile: isError %v, stdout %q, stderr %q", isErr, o.Stdout, o.Stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(rw, "made.txt")); string(got) != "ok\n" {
			t.Errorf("rw mount: made.txt is %q", got)
		}
		if got, _ := os.ReadFile(filepath.Join(ro, "keep.txt")); string(got) != "kept\n" {
			t.Errorf("ro mount changed: %q", got)
		}
		if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
			t.Errorf("a file was made in the ro mount")
		}
	})
}

// TestExecPathRewriting: where the command has no root of its own, sandbox
// paths in arguments, bash -c text and cwd are rewritten to host paths, at
// component boundaries only; with a private root they reach the command as
// given, and name the mounts there.
func TestExecPathRewriting(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		data, other := compatDir(t), compatDir(t)
		writeFile(t, filepath.Join(data, "f.txt"), "data")
		writeFile(t, filepath.Join(data, "sub dir", "g.txt"), "spaced")
		mounts := []map[string]any{toolsMount(), {"hostPath": data, "sandboxPath": "/mnt/ws", "mode": "ro"}, {"hostPath": other, "sandboxPath": "/mnt/ws2", "mode": "rw"}}
		o, _ := s.exec(map[string]any{"command": []string{"/mnt/tools/probe", "args", "/mnt/ws/f.txt", "--in=/mnt/ws/f.txt", "/mnt/ws2/x", "/mnt/wsx/y", "x/mnt/ws/f", "/mnt/ws"}, "mounts": mounts})
		ws, ws2 := data, other
		if m.ns {
			ws, ws2 = "/mnt/ws", "/mnt/ws2"
		}
		want := fmt.Sprintf("[%s/f.txt]\n[--in=%s/f.txt]\n[%s/x]\n[/mnt/wsx/y]\n[x/mnt/ws/f]\n[%s]\n", ws, ws, ws2, ws)
		if o.Stdout != want {
			t.Errorf("arguments:\n got %q\nwant %q", o.Stdout, want)
		}
		o, _ = s.exec(map[string]any{"command": bash("cat /mnt/ws/f.txt '/mnt/ws/sub dir/g.txt'"), "mounts": mounts})
		if o.Stdout != "dataspaced" {
			t.Errorf("bash -c text: %+v", o)
		}
		o, _ = s.exec(map[string]any{"command": bash("cat f.txt; pwd"), "mounts": mounts, "cwd": "/mnt/ws"})
		if o.Stdout != "data"+ws+"\n" {
			t.Errorf("cwd as sandbox path: %+v", o)
		}
		// A cwd given as the host path is the same directory, named as the
		// command sees it.
		o, _ = s.exec(map[string]any{"command": bash("cat g.txt; pwd"), "mounts": mounts, "cwd": filepath.Join(data, "sub dir")})
		if o.Stdout != "spaced"+ws+"/sub dir\n" {
			t.Errorf("cwd as host path: %+v", o)
		}
		for _, cwd := range []string{"/etc", "/mnt/nowhere", "relative", "/mnt/ws/missing"} {
			res := s.callRaw("exec_command", map[string]any{"command": []string{"pwd"}, "mounts": mounts, "cwd": cwd})
			if !res.IsError {
				t.Errorf("cwd %q accepted", cwd)
			}
		}
	})
}
