//go:build linux

package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountThroughLink (issue 20, item 4): a symbolic link that one call writes
// cannot take a later call's mount elsewhere. Call 1, with a rw mount of proj,
// runs `ln -s PRIVATE proj/out`; then proj/out as a mount's hostPath (ro or
// rw, exec_command and execute_js), as copy_then_sync's hostPath and as its
// storagePath are refused, each naming the link and its target. The controls:
// PRIVATE and proj by their own paths mount, and the result reports the host
// directory of each mount.
func TestMountThroughLink(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	proj, private := filepath.Join(t.TempDir(), "proj"), filepath.Join(t.TempDir(), "private")
	for _, d := range []string{proj, private} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777) // a root server without namespaces runs commands as another uid
	}
	writeFile(t, filepath.Join(private, "secret"), "private data\n")
	o, _ := s.exec(map[string]any{"command": []string{"ln", "-s", private, "/mnt/proj/out"}, "mounts": []map[string]any{{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}}})
	if o.code() != 0 {
		t.Fatalf("call 1, ln -s: %+v", o)
	}
	out := filepath.Join(proj, "out")
	wantLink := func(what, msg string) {
		t.Helper()
		if !strings.Contains(msg, "symbolic link "+out+" (-> "+private+")") {
			t.Errorf("%s: want refused naming the link %s and its target, got %q", what, out, msg)
		}
	}
	for _, mode := range []string{"ro", "rw"} {
		res := s.callRaw("exec_command", map[string]any{"command": []string{"cat", "/mnt/o/secret"}, "mounts": []map[string]any{{"hostPath": out, "sandboxPath": "/mnt/o", "mode": mode}}})
		wantLink("exec_command, "+mode+" mount through the link", errorOf(res))
		res = s.callRaw("execute_js", map[string]any{"code": "return host.readFile('/mnt/o/secret')", "mounts": []map[string]any{{"hostPath": out, "sandboxPath": "/mnt/o", "mode": mode}}})
		wantLink("execute_js, "+mode+" mount through the link", errorOf(res))
	}
	res := s.callRaw("copy_then_sync", map[string]any{"action": "create", "hostPath": out, "sandboxPath": "/mnt/o", "copyMode": "auto"})
	wantLink("copy_then_sync create, hostPath through the link", errorOf(res))
	src := t.TempDir()
	for _, storage := range []string{out, filepath.Join(out, "new")} {
		res = s.callRaw("copy_then_sync", map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/o", "storagePath": storage, "copyMode": "auto"})
		wantLink("copy_then_sync create, storagePath "+storage, errorOf(res))
	}
	if got := readFile(t, filepath.Join(private, "secret")); got != "private data\n" {
		t.Errorf("the private file changed: %q", got)
	}

	// Controls: the real paths mount, and the result says what was mounted.
	res = s.callRaw("exec_command", map[string]any{"command": []string{"cat", "/mnt/p/secret"}, "mounts": []map[string]any{{"hostPath": private, "sandboxPath": "/mnt/p"}, {"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}}})
	var e struct {
		Stdout string `json:"stdout"`
		Mounts []struct {
			SandboxPath, HostPath, Mode string
		} `json:"mounts"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &e)
	if res.IsError || e.Stdout != "private data\n" || len(e.Mounts) != 2 || e.Mounts[0].HostPath != private || e.Mounts[0].Mode != "ro" || e.Mounts[1].HostPath != proj || e.Mounts[1].Mode != "rw" {
		t.Errorf("control: mounts by their real paths: %s", raw)
	}
	res = s.callRaw("execute_js", map[string]any{"code": "return host.readFile('/mnt/p/secret')", "mounts": []map[string]any{{"hostPath": private, "sandboxPath": "/mnt/p"}}})
	if raw, _ = json.Marshal(res.StructuredContent); res.IsError || !strings.Contains(string(raw), `"hostPath":"`+private+`"`) || !strings.Contains(string(raw), "private data") {
		t.Errorf("control: execute_js with the real path: %s", raw)
	}
	if c, isErr := s.ws(map[string]any{"action": "create", "hostPath": private, "sandboxPath": "/mnt/o", "storagePath": t.TempDir(), "copyMode": "auto"}); isErr || !c.OK {
		t.Errorf("control: copy_then_sync create with the real path: %+v", c)
	}
}

// TestCLIMountThroughLink: the same on the command line, where a relative
// HOST is taken from the working directory.
func TestCLIMountThroughLink(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	proj, private := filepath.Join(h.dir, "proj"), filepath.Join(h.dir, "private")
	writeFile(t, filepath.Join(private, "secret"), "private data\n")
	if err := os.Mkdir(proj, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(proj, 0o777)
	os.Chmod(h.dir, 0o755)
	os.Chmod(private, 0o755)
	os.Chmod(filepath.Join(private, "secret"), 0o644)
	h.want(h.run("", "exec", "--mount", proj+":/mnt/proj:rw", "--", "ln", "-s", private, "/mnt/proj/out"), 0, "", "")
	out := filepath.Join(proj, "out")
	link := "symbolic link " + out + " (-> " + private + ")"
	h.want(h.run("", "exec", "--mount", out+":/mnt/o:rw", "--", "cat", "/mnt/o/secret"), 125, "", link)
	h.want(h.run("", "exec", "--mount", "proj/out:/mnt/o", "--", "cat", "/mnt/o/secret"), 125, "", link)
	h.want(h.run("", "js", "--mount", out+":/mnt/o", "-e", "return host.readFile('/mnt/o/secret')"), 125, "", link)
	h.want(h.run("", "ws", "create", "--copy-mode", "auto", out, "/mnt/o"), 125, "", link)
	h.want(h.run("", "ws", "create", "--copy-mode", "auto", "--storage", filepath.Join(out, "ws"), proj, "/mnt/o"), 125, "", link)
	// Controls.
	h.want(h.run("", "exec", "--mount", "private:/mnt/p", "--", "cat", "/mnt/p/secret"), 0, "private data", "")
	r := h.run("", "exec", "--json", "--mount", private+":/mnt/p", "--", "true")
	if r.code != 0 || !strings.Contains(r.stdout, `"hostPath":"`+private+`"`) {
		t.Errorf("exec --json reports the mount's host path: %s", r)
	}
}
