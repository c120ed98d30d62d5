//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlacesEtcSecretsHiddenInEveryMountMode: a mount of a directory of /etc
// that holds a secret (/etc/ssl holds ssl/private), read-only or read-write,
// at a place beside another (whose parent rule covers it), never shows the
// secret; the directory's other files are readable (positive control). Before
// the fix a read-write mount showed /etc/ssl/private's key to a root server's
// command.
func TestPlacesEtcSecretsHiddenInEveryMountMode(t *testing.T) {
	if _, err := os.Stat("/etc/ssl/private"); err != nil {
		t.Skip("no /etc/ssl/private here")
	}
	if _, err := os.Stat("/etc/ssl/openssl.cnf"); err != nil {
		t.Skip("no /etc/ssl/openssl.cnf here (the positive control)")
	}
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		other := compatDir(t)
		for _, mode := range []string{"ro", "rw"} {
			res := s.callRaw("exec_command", map[string]any{"command": bash("cat /mnt/ssl/private/* 2>/dev/null; echo; head -c 1 /mnt/ssl/openssl.cnf >/dev/null && echo CONTROL"),
				"mounts": []map[string]any{{"hostPath": "/etc/ssl", "sandboxPath": "/mnt/ssl", "mode": mode}, {"hostPath": other, "sandboxPath": "/mnt/other"}}})
			txt := textOf(res)
			if strings.Contains(txt, "PRIVATE KEY") {
				t.Errorf("mode %s: a secret of /etc/ssl/private shows: %s", mode, txt)
			}
			if !res.IsError && !strings.Contains(txt, "CONTROL") {
				t.Errorf("mode %s: /mnt/ssl/openssl.cnf is not readable (positive control): %s", mode, txt)
			}
		}
	})
}

// TestPlacesHostileLayouts: two mounts of one host path, read-only and
// read-write, are refused (the read-only one could not stay so); a read-only
// mount stays read-only through its nested read-write mount placed apart and
// through a symbolic link the command makes in a read-write place; a user
// namespace made inside the command cannot remount it. Each with its control:
// the same write to the read-write place works.
func TestPlacesHostileLayouts(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		host, rw := compatDir(t), compatDir(t)
		sub := filepath.Join(host, "sub")
		writeFile(t, filepath.Join(sub, "f.txt"), "orig\n")
		os.Chmod(sub, 0o777)
		os.Chmod(filepath.Join(sub, "f.txt"), 0o666)
		res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "mounts": []map[string]any{{"hostPath": host, "sandboxPath": "/mnt/ro", "mode": "ro"}, {"hostPath": host, "sandboxPath": "/mnt/rw", "mode": "rw"}}})
		if txt := textOf(res); !res.IsError || !strings.Contains(txt, "could not stay read-only") {
			t.Errorf("one host path ro and rw: isError %v, %s", res.IsError, txt)
		}
		o, isErr := s.exec(map[string]any{"command": bash("cat /mnt/ro/f.txt /mnt/a/f.txt; echo x > /mnt/ro/f.txt 2>/dev/null && echo WROTE-RO-TWICE; true"), "mounts": []map[string]any{{"hostPath": sub, "sandboxPath": "/mnt/ro", "mode": "ro"}, {"hostPath": sub, "sandboxPath": "/mnt/a", "mode": "ro"}}})
		if isErr || o.Stdout != "orig\norig\n" {
			t.Errorf("one host path ro at two places (control): %+v", o)
		}
		script := `ln -s /mnt/r/f.txt /mnt/w/l && echo LINKED
echo L > /mnt/w/l 2>/dev/null && echo WROTE-THROUGH-LINK
unshare -Urm sh -c 'mount -o remount,bind,rw /mnt/r; echo U > /mnt/r/f.txt' 2>/dev/null && echo WROTE-IN-USERNS
echo ok > /mnt/w/made.txt && echo rw-ok`
		o, isErr = s.exec(map[string]any{"command": bash(script), "mounts": []map[string]any{{"hostPath": sub, "sandboxPath": "/mnt/r", "mode": "ro"}, {"hostPath": rw, "sandboxPath": "/mnt/w", "mode": "rw"}}})
		if isErr || o.Stdout != "LINKED\nrw-ok\n" {
			t.Errorf("hostile: isError %v, stdout %q, stderr %q", isErr, o.Stdout, o.Stderr)
		}
		if m.ns {
			// A read-only parent stays read-only where its read-write child is placed apart.
			o, isErr = s.exec(map[string]any{"command": bash("echo P > /mnt/a/sub/f.txt 2>/dev/null && echo WROTE-RO-PARENT; echo C > /mnt/b/c.txt && echo child-ok"), "mounts": []map[string]any{{"hostPath": host, "sandboxPath": "/mnt/a", "mode": "ro"}, {"hostPath": sub, "sandboxPath": "/mnt/b", "mode": "rw"}}})
			if isErr || o.Stdout != "child-ok\n" {
				t.Errorf("nested: isError %v, stdout %q, stderr %q", isErr, o.Stdout, o.Stderr)
			}
		}
		if got := readFile(t, filepath.Join(sub, "f.txt")); got != "orig\n" {
			t.Errorf("the read-only file changed: %q", got)
		}
	})
}
