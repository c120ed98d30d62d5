package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// lockedBuffer is a bytes.Buffer for a logger that goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loggedServer is a jailed server whose log the test reads.
func loggedServer(t *testing.T, size int) (*Server, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	s, err := New(Options{Exe: testBin, PoolSize: size, StateDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

// allowListMiss is what the pool logs for a worker whose filter refused calls.
const allowListMiss = "outside its allow-list"

// wasmAdd is a WebAssembly module exporting add(i32, i32) i32.
const wasmAdd = "new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11])"

// TestWorkerSyscallsMeasured is the measurement behind the worker's seccomp
// allow-list (jail/seccomp/worker.go): representative calls run in jailed workers,
// and the test fails if any worker made a system call its filter refused (each is
// reported on the worker's stderr and logged by the pool). A new V8 or Go that
// needs a call the list lacks fails here, naming it. The positive control has a
// worker make a call the list lacks and finds it logged. It runs in this host's
// mode and again without namespaces.
func TestWorkerSyscallsMeasured(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux jail")
	}
	if st := jail.Probe(); st.LandlockABI < jail.MinLandlockABI || !st.Seccomp {
		t.Skipf("host cannot jail workers: %s", st)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.json"), []byte(`{"n": 41}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 10<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			fmt.Fprint(w, big)
			return
		}
		fmt.Fprint(w, `{"ok": true}`)
	}))
	defer srv.Close()
	// ICU names the time zone from TZ, and would readlink /etc/localtime without it.
	t.Setenv("TZ", "Asia/Tokyo")
	mount := []policy.MountSpec{{HostPath: dir, SandboxPath: "/mnt/d", Mode: "rw"}}
	ms := func(n int) *int { return &n }
	calls := []struct {
		name string
		in   JSInput
		want string // in the result, or in the error when it starts with "!"
	}{
		{"allocation and GC", JSInput{Code: "let keep = []; for (let i = 0; i < 3000; i++) { const a = new Array(10000).fill(i); if (i % 100 == 0) keep.push(a) } keep.length", MemoryMb: ms(128), TimeoutMs: ms(10000)}, "30"},
		{"strings and regexps", JSInput{Code: "let s = 'ab'.repeat(300000); s.replace(/(a)(b)/g, '$2$1').length + /(x+x+)+y/.test('x'.repeat(18))", TimeoutMs: ms(10000)}, "600000"},
		{"a big ArrayBuffer", JSInput{Code: "const u = new Uint8Array(new ArrayBuffer(96 << 20)); for (let i = 0; i < u.length; i += 4096) u[i] = 1; u.length", MemoryMb: ms(128), TimeoutMs: ms(10000)}, "100663296"},
		{"WebAssembly", JSInput{Code: "const m = new WebAssembly.Instance(new WebAssembly.Module(" + wasmAdd + ")); const mem = new WebAssembly.Memory({initial: 1, maximum: 200}); mem.grow(100); m.exports.add(40, 2) + mem.buffer.byteLength", TimeoutMs: ms(10000)}, "6619178"},
		{"promises and timers", JSInput{Code: "let n = 0; await Promise.all([1, 2, 3].map(i => new Promise(r => setTimeout(() => { n += i; r() }, i * 10)))); await null; n"}, "6"},
		{"the file bridge", JSInput{Code: "await host.writeFile('/mnt/d/out.txt', 'hi'); const n = JSON.parse(await host.readFile('/mnt/d/in.json')).n; return [n + 1, (await host.listDir('/mnt/d')).length]", Mounts: mount}, "[42,2]"},
		{"fetch", JSInput{Code: fmt.Sprintf("const [a, b] = await Promise.all([fetch(%q).then(r => r.json()), fetch(%q).then(r => r.text())]); [a.ok, b.length]", srv.URL+"/json", srv.URL+"/big"), AllowNetwork: true, TimeoutMs: ms(10000)}, "[true,10485760]"},
		{"console and errors", JSInput{Code: "for (let i = 0; i < 1000; i++) console.log('line', i); try { null.x } catch (e) { console.error(e.stack) } new Date().toISOString().length + Math.floor(Math.random())", TimeoutMs: ms(10000)}, "24"},
		{"dates in the server's time zone", JSInput{Code: "[Intl.DateTimeFormat().resolvedOptions().timeZone, new Date(0).getTimezoneOffset(), new Date(0).toString().includes('GMT+0900')]"}, `["Asia/Tokyo",-540,true]`},
		{"Intl", JSInput{Code: "[(1234.5).toLocaleString('de-DE'), 'e\u0301'.normalize('NFC').length, new Intl.Collator('sv').compare('z', 'ö'), new Intl.DateTimeFormat('fr', {dateStyle: 'full', timeZone: 'UTC'}).format(0)]", TimeoutMs: ms(10000)}, `["1.234,5",1,-1,"jeudi 1 janvier 1970"]`},
		{"deep recursion", JSInput{Code: "function f(n) { return f(n + 1) + 1 } try { f(0) } catch (e) { e.name }", TimeoutMs: ms(10000)}, "RangeError"},
		{"another heap size", JSInput{Code: "JSON.stringify(Array.from({length: 100000}, (_, i) => ({i}))).length", MemoryMb: ms(256), TimeoutMs: ms(10000)}, "1188891"},
		{"heap exhaustion", JSInput{Code: "let a = []; while (true) a.push(new Array(100000).fill({}))", MemoryMb: ms(16), TimeoutMs: ms(10000)}, "!MemoryLimitError"},
		{"a timeout", JSInput{Code: "while (true) {}", TimeoutMs: ms(300)}, "!TimeoutError"},
		{"a timeout in microtasks", JSInput{Code: "const loop = () => Promise.resolve().then(loop); loop(); await new Promise(() => {})", TimeoutMs: ms(300)}, "!TimeoutError"},
		{"a thrown error", JSInput{Code: "throw new TypeError('boom')"}, "!TypeError: boom"},
	}
	s, logs := loggedServer(t, 1)
	mode := s.JSWorkers().Isolation
	for _, c := range calls {
		out, err := s.ExecuteJS(context.Background(), &c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if out.Isolation != mode {
			t.Errorf("%s: isolation %q, want %q", c.name, out.Isolation, mode)
		}
		want, isErr := strings.CutPrefix(c.want, "!")
		switch {
		case isErr && (out.OK || out.Error == nil || !strings.Contains(*out.Error, want)):
			t.Errorf("%s: ok %v, error %v, want an error with %q", c.name, out.OK, deref(out.Error), want)
		case !isErr && (!out.OK || !strings.Contains(resultJSON(out), want)):
			t.Errorf("%s: ok %v, result %s, error %v, want %s", c.name, out.OK, resultJSON(out), deref(out.Error), want)
		}
	}
	s.Close() // every worker reaped, its refusals logged
	if strings.Contains(logs.String(), allowListMiss) {
		t.Errorf("workers made system calls their allow-list refuses (%s mode):\n%s", mode, logs.String())
	}
	t.Logf("%d kinds of call in %s mode, no system call refused", len(calls), mode)

	// The positive control: a call outside the list is refused and logged by name.
	p, plogs := loggedServer(t, 1)
	lines, err := p.ProbeWorkerJail(context.Background(), []string{fmt.Sprintf("syscall:%d", syscall.SYS_SOCKET)})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	for _, l := range lines {
		if !strings.HasSuffix(l, syscall.ENOSYS.Error()) {
			t.Errorf("socket(2) in a worker: %s, want ENOSYS", l)
		}
	}
	if !strings.Contains(plogs.String(), allowListMiss) || !strings.Contains(plogs.String(), "calls=socket") {
		t.Errorf("a refused socket(2) was not logged:\n%s", plogs.String())
	}

	if os.Getenv(jail.NoNamespacesEnv) == "" && mode != jail.ModeLandlock {
		t.Run("no-namespaces", func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestWorkerSyscallsMeasured$", "-test.count", "1", "-test.v")
			cmd.Env = append(os.Environ(), jail.NoNamespacesEnv+"=1", testBinEnv+"="+testBin)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "in "+jail.ModeLandlock+" mode, no system call refused") {
				t.Errorf("without namespaces: %v\n%s", err, out)
			}
		})
	}
}

func resultJSON(out *JSOutput) string {
	b, _ := json.Marshal(out.Result)
	return string(b)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
