package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantJSError runs code that must fail with an error containing want.
func (s *session) wantJSError(args map[string]any, want string) jsOut {
	s.t.Helper()
	o, isErr := s.js(args)
	if !isErr || o.OK || !strings.Contains(o.err(), want) {
		s.t.Errorf("%v: want error containing %q, got isError=%v ok=%v error=%q result=%s", args["code"], want, isErr, o.OK, o.err(), o.Result)
	}
	return o
}

// TestJSSeedMountsExample is the seed's "Transform files using mounts" example.
func TestJSSeedMountsExample(t *testing.T) {
	s := start(t)
	in, out := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(in, "data.json"), `{"items":[1,2,3]}`)
	o := s.mustJS(map[string]any{
		"code": "const raw = await host.readFile(\"/mnt/in/data.json\");\nconst n = JSON.parse(raw).items.length;\nawait host.writeFile(\"/mnt/out/count.txt\", String(n));\nreturn n;",
		"mounts": []map[string]any{
			{"hostPath": in, "sandboxPath": "/mnt/in", "mode": "ro"},
			{"hostPath": out, "sandboxPath": "/mnt/out", "mode": "rw"},
		},
	})
	if string(o.Result) != "3" || readFile(t, filepath.Join(out, "count.txt")) != "3" {
		t.Errorf("result %s, count.txt %q", o.Result, readFile(t, filepath.Join(out, "count.txt")))
	}
	if o.ReadBytes != 17 || o.WriteBytes != 1 {
		t.Errorf("readBytes %d writeBytes %d, want 17 and 1", o.ReadBytes, o.WriteBytes)
	}
}

func TestJSBridgeRules(t *testing.T) {
	s := start(t)
	ro, rw, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ro, "a.txt"), "ro-data")
	writeFile(t, filepath.Join(ro, "sub", "b.txt"), "nested")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret")
	writeFile(t, filepath.Join(rw, "keep.txt"), "original")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ro, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../"+filepath.Base(outside), filepath.Join(ro, "escape-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/b.txt", filepath.Join(ro, "inside")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ro, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts := []map[string]any{
		{"hostPath": ro, "sandboxPath": "/mnt/ro", "mode": "ro"},
		{"hostPath": rw, "sandboxPath": "/mnt/rw", "mode": "rw"},
	}
	js := func(code string) map[string]any { return map[string]any{"code": code, "mounts": mounts} }

	// Positive controls.
	if o := s.mustJS(js("host.readFile('/mnt/ro/a.txt')")); string(o.Result) != `"ro-data"` {
		t.Errorf("read ro: %s", o.Result)
	}
	if o := s.mustJS(js("host.readFile('/mnt/ro/inside')")); string(o.Result) != `"nested"` {
		t.Errorf("symlink inside the mount: %s", o.Result)
	}
	if o := s.mustJS(js("host.listDir('/mnt/ro')")); string(o.Result) != `["a.txt","escape","escape-dir","fifo","inside","sub"]` {
		t.Errorf("listDir: %s", o.Result)
	}
	s.mustJS(js("host.writeFile('/mnt/rw/new.txt', 'fresh'); return host.readFile('/mnt/rw/new.txt')"))
	if got := readFile(t, filepath.Join(rw, "new.txt")); got != "fresh" {
		t.Errorf("write rw: %q", got)
	}

	// Denials.
	s.wantJSError(js("host.writeFile('/mnt/ro/a.txt', 'x')"), "read-only")
	s.wantJSError(js("host.writeFile('/mnt/ro/new.txt', 'x')"), "read-only")
	s.wantJSError(js("host.readFile('/mnt/elsewhere/x')"), "outside the declared mounts")
	s.wantJSError(js("host.readFile('/etc/passwd')"), "outside the declared mounts")
	s.wantJSError(js("host.readFile('/mnt/ro/../rw/keep.txt')"), `".."`)
	s.wantJSError(js("host.readFile('mnt/ro/a.txt')"), "not an absolute sandbox path")
	s.wantJSError(js("host.readFile('/mnt/ro/escape')"), "escapes its mount")
	s.wantJSError(js("host.readFile('/mnt/ro/escape-dir/secret.txt')"), "escapes its mount")
	s.wantJSError(js("host.listDir('/mnt/ro/escape-dir')"), "escapes its mount")
	s.wantJSError(js("host.readFile('/mnt/ro/fifo')"), "not a regular file")
	s.wantJSError(js("host.readFile('/mnt/ro/missing')"), "no such file")
	s.wantJSError(js("host.readFile('/mnt/ro/sub')"), "is a directory")
	s.wantJSError(js("host.readFile({toString() { return '/mnt/ro/a.txt' }})"), "path must be a string")
	s.wantJSError(js("host.writeFile('/mnt/rw/x', {})"), "content must be a string")
	if _, err := os.Stat(filepath.Join(outside, "secret.txt")); err != nil {
		t.Fatal(err)
	}

	// Quotas are cumulative; a rejected write leaves nothing behind.
	s.wantJSError(map[string]any{"code": "host.readFile('/mnt/ro/a.txt'); host.readFile('/mnt/ro/a.txt')", "mounts": mounts, "maxReadBytes": 10}, "maxReadBytes")
	o := s.wantJSError(map[string]any{"code": "host.writeFile('/mnt/rw/q.txt', 'abcdef'); host.writeFile('/mnt/rw/keep.txt', 'abcdef')", "mounts": mounts, "maxWriteBytes": 10}, "maxWriteBytes")
	if o.WriteBytes != 6 {
		t.Errorf("writeBytes after rejected write: %d, want 6", o.WriteBytes)
	}
	if got := readFile(t, filepath.Join(rw, "keep.txt")); got != "original" {
		t.Errorf("rejected write changed keep.txt to %q", got)
	}
	entries, _ := os.ReadDir(rw)
	for _, e := range entries {
		if strings.Contains(e.Name(), "autobox") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestJSMountValidation(t *testing.T) {
	s := start(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	writeFile(t, file, "x")
	cases := []struct {
		mounts []map[string]any
		want   string
	}{
		{[]map[string]any{{"hostPath": "relative/dir", "sandboxPath": "/mnt/a"}}, "not an absolute path"},
		{[]map[string]any{{"hostPath": filepath.Join(dir, "missing"), "sandboxPath": "/mnt/a"}}, "does not exist"},
		{[]map[string]any{{"hostPath": file, "sandboxPath": "/mnt/a"}}, "not a directory"},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/a", "mode": "rwx"}}, `mode "rwx"`},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/a", "mode": "RW"}}, `mode "RW"`},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "mnt/a"}}, "not absolute"},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/"}}, "cannot be /"},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/../etc"}}, `".."`},
		{[]map[string]any{{"hostPath": dir}}, "sandboxPath is required"},
		{[]map[string]any{{"sandboxPath": "/mnt/a"}}, "hostPath is required"},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/a"}, {"hostPath": dir, "sandboxPath": "/mnt/a"}}, "used twice"},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/a"}, {"hostPath": dir, "sandboxPath": "/mnt/a/b"}}, "nested"},
		{[]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/a", "mode": "rw"}, {"hostPath": filepath.Join(dir), "sandboxPath": "/mnt/b", "mode": "ro"}}, "could not stay read-only"},
	}
	for _, c := range cases {
		o, isErr := s.js(map[string]any{"code": "1", "mounts": c.mounts})
		if !isErr || o.OK || !strings.Contains(o.err(), c.want) {
			t.Errorf("%v: want error containing %q, got isError=%v error=%q", c.mounts, c.want, isErr, o.err())
		}
	}
	// Positive control: /mnt/ws and /mnt/ws2 are siblings, not nested.
	s.mustJS(map[string]any{"code": "1", "mounts": []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/ws"}, {"hostPath": dir, "sandboxPath": "/mnt/ws2"}}})
}

func TestJSFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"method":%q,"hdr":%q}`, r.Method, r.Header.Get("X-Test"))
		case "/redirect":
			http.Redirect(w, r, "/json", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/big":
			chunk := strings.Repeat("x", 1<<20)
			for i := 0; i < 11; i++ {
				fmt.Fprint(w, chunk)
			}
		case "/slow":
			time.Sleep(3 * time.Second)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s := start(t)
	net := func(code string) map[string]any {
		return map[string]any{"code": code, "allowNetwork": true, "timeoutMs": 2000}
	}
	// Off by default: nothing network-shaped exists.
	if o := s.mustJS(map[string]any{"code": "typeof fetch + typeof net"}); string(o.Result) != `"undefinedundefined"` {
		t.Errorf("network surface without allowNetwork: %s", o.Result)
	}
	o := s.mustJS(net(fmt.Sprintf("const r = await fetch(%q, {method: 'POST', headers: {'X-Test': 'hi'}, body: 'b'}); return [r.status, r.ok, await r.json()]", srv.URL+"/json")))
	if string(o.Result) != `[200,true,{"hdr":"hi","method":"POST"}]` {
		t.Errorf("fetch: %s", o.Result)
	}
	// The issue's own case: the last expression after an await is the value.
	o = s.mustJS(net(fmt.Sprintf("const r = await fetch(%q); [r.status, r.ok]", srv.URL+"/json")))
	if string(o.Result) != `[200,true]` {
		t.Errorf("fetch, value of the last expression: %s", o.Result)
	}
	o = s.mustJS(net(fmt.Sprintf("const r = await net.fetch(%q); return [r.redirected, (await net.fetchJson(%q)).method, r.headers.get('content-type')]", srv.URL+"/redirect", srv.URL+"/json")))
	if string(o.Result) != `[true,"GET","application/json"]` {
		t.Errorf("net.fetch redirect: %s", o.Result)
	}
	if o := s.mustJS(net(fmt.Sprintf("(await fetch(%q)).status", srv.URL+"/missing"))); string(o.Result) != "404" {
		t.Errorf("404: %s", o.Result)
	}
	s.wantJSError(net(fmt.Sprintf("await fetch(%q)", srv.URL+"/to-file")), "only http and https")
	s.wantJSError(net("await fetch('file:///etc/passwd')"), "only http and https")
	s.wantJSError(net(fmt.Sprintf("await fetch(%q)", srv.URL+"/big")), "response body over")
	// Bounded by the call's own time limit.
	o, _ = s.js(map[string]any{"code": fmt.Sprintf("await fetch(%q)", srv.URL+"/slow"), "allowNetwork": true, "timeoutMs": 300})
	if o.OK || !(strings.Contains(o.err(), "TimeoutError") || strings.Contains(o.err(), "timed out")) {
		t.Errorf("slow fetch: %q", o.err())
	}
}
