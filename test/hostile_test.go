package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestJSHostileCode throws at the isolate what a confused or malicious model might:
// every call ends with a clear result or error, and the server keeps serving.
func TestJSHostileCode(t *testing.T) {
	s := start(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.txt"), "data")
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "rw"}}
	cases := []struct {
		code    string
		wantErr string // "" means the call must succeed
		want    string // result JSON when it succeeds
	}{
		{"function f() { return f() } f()", "RangeError: Maximum call stack size exceeded", ""},
		{"new ArrayBuffer(2 ** 40)", "RangeError", ""},
		{"const m = new WebAssembly.Memory({initial: 1, maximum: 65536}); for (;;) m.grow(100)", "Error", ""}, // RangeError or TimeoutError: bounded either way
		{"const sab = new SharedArrayBuffer(8); Atomics.wait(new Int32Array(sab), 0, 0, 10000)", "TimeoutError", ""},
		{"'x'.repeat(2 ** 29)", "", ""}, // allowed or refused, but answered (checked below)
		{"({ get a() { for (;;) {} } })", "TimeoutError", ""},
		{"({ toJSON() { throw new Error('hostile toJSON') } })", "hostile toJSON", ""},
		{"'\\ud800'", "", "\"\ufffd\""},
		{"Object.prototype.then = (r) => r(1); Promise.prototype.then = null; 5", "", ""},
		{"JSON.parse = () => 'pwned'; JSON.stringify = () => 'pwned'; host.readFile('/mnt/d/in.txt')", "", `"data"`},
		{"Object.defineProperty(Object.prototype, 'error', {get() { return 'forged' }}); host.readFile('/mnt/d/in.txt')", "", `"data"`},
		{"host.readFile = () => 'fake'; host.readFile('/mnt/d/in.txt')", "", `"data"`},
		{"delete globalThis.host; typeof host", "", `"object"`},
		{"host.readFile(new Proxy({}, {get() { return () => '/mnt/d/in.txt' }}))", "path must be a string", ""},
		{"host.writeFile('/mnt/d/x', {toString() { return 'sneaky' }})", "content must be a string", ""},
		{"throw Symbol('s')", "Uncaught", ""},
		{"throw {toString() { for (;;) {} }}", "", ""},
		{"const e = new Error('x'); Object.defineProperty(e, 'message', {get() { throw 1 }}); throw e", "", ""},
		{"Array.prototype.push = null; console.log('still logs'); 1", "", "1"},
		{"String.prototype.toLowerCase = () => { throw 1 }; 2", "", "2"},
	}
	for _, c := range cases {
		o, isErr := s.js(map[string]any{"code": c.code, "mounts": mounts, "timeoutMs": 500, "memoryMb": 32})
		if o.Logs == nil {
			t.Errorf("%q: no result object: %+v", c.code, o)
			continue
		}
		switch {
		case c.wantErr != "":
			if !isErr || !strings.Contains(o.err(), c.wantErr) {
				t.Errorf("%q: want error containing %q, got isError=%v ok=%v error=%q result=%.100s", c.code, c.wantErr, isErr, o.OK, o.err(), o.Result)
			}
		case c.want != "":
			if !o.OK || string(o.Result) != c.want {
				t.Errorf("%q: want %s, got ok=%v result=%.100s error=%q", c.code, c.want, o.OK, o.Result, o.err())
			}
		default:
			if !o.OK && o.err() == "" {
				t.Errorf("%q: failed without an error: %+v", c.code, o)
			}
		}
	}
	if got := readFile(t, filepath.Join(dir, "in.txt")); got != "data" {
		t.Errorf("in.txt changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Errorf("a refused write left a file")
	}
	if o := s.mustJS(map[string]any{"code": "6*7"}); string(o.Result) != "42" {
		t.Errorf("server after hostile code: %s", o.Result)
	}
}

// TestJSSymlinkSwapRace swaps a path between a real directory and a link leading out of
// the mount while calls read and write through it: no read or write ever escapes.
func TestJSSymlinkSwapRace(t *testing.T) {
	s := start(t)
	mnt, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), "SECRET")
	real := filepath.Join(mnt, "real")
	writeFile(t, filepath.Join(real, "secret.txt"), "inside")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Cleanups run last in first out: the swapper stops before the temporary
	// directories are removed, whichever way the test ends.
	stopped := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopped)
	wg.Add(1)
	go func() {
		defer wg.Done()
		link := filepath.Join(mnt, "swap")
		tmp := filepath.Join(mnt, "swap.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(tmp)
			if i%2 == 0 {
				os.Symlink(outside, tmp)
			} else {
				os.Symlink("real", tmp)
			}
			os.Rename(tmp, link)
		}
	}()
	// At most 400 rounds, and no more than 3 s of them: on a loaded machine each
	// round can take long, and the test's point is the race, not the count.
	code := `let leaks = 0, ok = 0;
const end = Date.now() + 3000;
for (let i = 0; i < 400 && Date.now() < end; i++) {
  try { const v = host.readFile('/mnt/m/swap/secret.txt'); if (v === 'SECRET') leaks++; else ok++; } catch (e) {}
  try { host.writeFile('/mnt/m/swap/planted.txt', 'x' + i); } catch (e) {}
}
return {leaks, ok};`
	mounts := []map[string]any{{"hostPath": mnt, "sandboxPath": "/mnt/m", "mode": "rw"}}
	total := 0
	for round := 0; round < 5; round++ {
		o := s.mustJS(map[string]any{"code": code, "mounts": mounts, "timeoutMs": 10000, "maxWriteBytes": 50000000})
		var leaks, ok int
		fmt.Sscanf(strings.NewReplacer(`{"leaks":`, "", `,"ok":`, " ", "}", "").Replace(string(o.Result)), "%d %d", &leaks, &ok)
		if leaks != 0 {
			t.Errorf("round %d: %d reads escaped the mount", round, leaks)
		}
		total += ok
	}
	stopped()
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Errorf("a write escaped the mount through the swapped link")
	}
	if total == 0 {
		t.Errorf("positive control: no read through the link ever succeeded while it pointed inside")
	}
	// A rejected or failed write leaves nothing behind, in the mount or outside it.
	var tmps []string
	for _, root := range []string{mnt, outside} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(d.Name(), ".tmp") && strings.Contains(d.Name(), ".autobox-") {
				tmps = append(tmps, p)
			}
			return nil
		})
	}
	if len(tmps) > 0 {
		t.Errorf("%d temp files of bridge writes left behind, e.g. %s", len(tmps), tmps[0])
	}
	if _, err := os.Stat(filepath.Join(real, "planted.txt")); err != nil {
		t.Errorf("positive control: no write through the link ever landed while it pointed inside: %v", err)
	}
}

// TestConcurrentCalls runs 20 calls of each tool at once with one runaway among them:
// the others finish normally and none sees another's mounts or scratch dir.
func TestConcurrentCalls(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := 0; i < 20; i++ {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "id.txt"), fmt.Sprint(i))
		mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/own", "mode": "rw"}}
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			code := fmt.Sprintf("globalThis.mine = %d; return host.readFile('/mnt/own/id.txt') + ':' + host.listDir('/mnt/own').length", i)
			// The longest a call may have: 40 calls at once on a busy machine
			// can take seconds to be served, and the point is that they are.
			timeout := 10000
			if i == 7 {
				code, timeout = "while (true) {}", 3000
			}
			o, _ := s.js(map[string]any{"code": code, "mounts": mounts, "timeoutMs": timeout})
			if i == 7 {
				if !strings.Contains(o.err(), "TimeoutError") {
					errs <- fmt.Sprintf("runaway js: %q", o.err())
				}
				return
			}
			if want := fmt.Sprintf(`"%d:1"`, i); string(o.Result) != want {
				errs <- fmt.Sprintf("js %d: got %s want %s (%s)", i, o.Result, want, o.err())
			}
		}(i)
		go func(i int) {
			defer wg.Done()
			cmd := bash("cat /mnt/own/id.txt; ls $HOME | wc -l; echo $i > $HOME/mark")
			timeout := 60000
			if i == 3 {
				cmd, timeout = bash("while :; do :; done"), 3000
			}
			o, _ := s.exec(map[string]any{"command": cmd, "mounts": mounts, "timeoutMs": timeout})
			if i == 3 {
				if !o.Killed {
					errs <- fmt.Sprintf("runaway exec not killed: %+v", o)
				}
				return
			}
			if want := fmt.Sprintf("%d0\n", i); o.Stdout != want {
				errs <- fmt.Sprintf("exec %d: got %q want %q (%s)", i, o.Stdout, want, o.Stderr)
			}
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("concurrent calls did not finish within 5 minutes")
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestNoDescriptorLeak: after many calls of every kind the server holds no more file
// descriptors and runs no more goroutines than after the first ones.
func TestNoDescriptorLeak(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	dir := t.TempDir()
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "rw"}}
	round := func() {
		s.mustJS(map[string]any{"code": "host.writeFile('/mnt/d/f', 'x'); host.readFile('/mnt/d/f')", "mounts": mounts})
		s.js(map[string]any{"code": "while(true){}", "timeoutMs": 20})
		s.exec(map[string]any{"command": []string{"echo", "hi"}, "mounts": mounts})
		s.exec(map[string]any{"command": []string{"sleep", "5"}, "timeoutMs": 20})
	}
	fds := func() int {
		time.Sleep(300 * time.Millisecond) // let the pools settle
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	round()
	base := fds()
	baseG := s.goroutines()
	for i := 0; i < 15; i++ {
		round()
	}
	// Replacement workers and launchers start shortly after a call and hold pipes
	// while they do; under the race detector that takes long: wait for them.
	n := fds()
	for deadline := time.Now().Add(10 * time.Second); n > base+4 && time.Now().Before(deadline); n = fds() {
	}
	if n > base+4 {
		t.Errorf("server fds grew from %d to %d over 15 rounds of calls", base, n)
	}
	// Clean-ups that follow a call's answer (reaping, removing scratch dirs) finish in
	// the background: give them a moment.
	g := s.goroutines()
	for deadline := time.Now().Add(5 * time.Second); g > baseG+5 && time.Now().Before(deadline); g = s.goroutines() {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("fds %d, goroutines %d -> %d", base, baseG, g)
	if g > baseG+5 {
		t.Errorf("server goroutines grew from %d to %d over 15 rounds of calls", baseG, g)
	}
}

// TestMagicLinksAndOddNames: /proc magic links cannot carry a call out of its mounts,
// and paths with spaces, newlines and unicode work like any other.
func TestMagicLinksAndOddNames(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	dir := t.TempDir()
	odd := "a dir\nwith ünïcode ✓"
	writeFile(t, filepath.Join(dir, odd, "f i\nle.txt"), "odd")
	mustSymlink(t, "/proc/self/root/etc/shadow", filepath.Join(dir, "magic"))
	mustSymlink(t, "/proc/self/cwd", filepath.Join(dir, "cwd"))
	mounts := []map[string]any{toolsMount(), {"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "rw"}}

	// JS bridge: links into /proc lead out of the mount and are refused.
	s.wantJSError(map[string]any{"code": "host.readFile('/mnt/d/magic')", "mounts": mounts}, "escapes its mount")
	s.wantJSError(map[string]any{"code": "host.listDir('/mnt/d/cwd')", "mounts": mounts}, "escapes its mount")
	o := s.mustJS(map[string]any{"code": "const p = '/mnt/d/a dir\\nwith ünïcode ✓/'; host.writeFile(p + 'new ✓', 'x'); [host.readFile(p + 'f i\\nle.txt'), host.listDir(p)]", "mounts": mounts})
	if string(o.Result) != `["odd",["f i\nle.txt","new ✓"]]` {
		t.Errorf("odd names through the bridge: %s", o.Result)
	}

	// Commands: magic links resolve to what they name, and Landlock judges that.
	dm := mounts[1:] // probe() adds the tools mount itself
	wantDenied(t, "/proc/self/root/etc/shadow", s.probe(dm, nil, "read", "/proc/self/root/etc/shadow"))
	wantDenied(t, "/proc/self/root/root", s.probe(dm, nil, "read", "/proc/self/root/root"))
	wantDenied(t, "link to /proc/self/root", s.probe(dm, nil, "read", "/mnt/d/magic"))
	wantDenied(t, "/proc/1/root", s.probe(dm, nil, "read", "/proc/1/root/etc/shadow"))
	// (The mount is where the command sees it: its sandboxPath with a root of
	// its own, its host path where paths are rewritten.)
	seen := dir
	if namespaced() {
		seen = "/mnt/d"
	}
	wantAllowed(t, "/proc/self/root into a mount", s.probe(dm, nil, "read", "/proc/self/root"+seen+"/"+odd+"/f i\nle.txt"))
	ex, _ := s.exec(map[string]any{"command": []string{"cat", "/mnt/d/" + odd + "/f i\nle.txt"}, "mounts": mounts})
	if ex.Stdout != "odd" {
		t.Errorf("odd names in argv: %+v", ex)
	}
}
