//go:build linux

// The command line's session server: `autobox exec --yield` and `autobox
// session` drive it, it ends after its last session, and only its user from
// outside the sandbox reaches it.

package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSessionServerNotFromSandbox (issue 20, item 2): the command line's
// session server answers its user from outside, never a sandboxed process of
// the same uid. A command with allowNetwork and a read-only mount of the home
// directory that holds the state dir tries the server's socket by every name it could learn (the old path
// socket in the state dir, the abstract name the lock file records), over MCP
// and on the command line, in every server mode; the same probe run outside
// the sandbox is the positive control.
func TestSessionServerNotFromSandbox(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.sessions = true
	id := h.startSession("--yield", "0", "--timeout", "1m", "--", "sleep", "60")
	t.Cleanup(func() {
		h.run("", "session", "close", id)
		if left := binLeft(); len(left) > 0 {
			t.Errorf("the session server did not end: %v", left)
		}
	})
	h.want(h.run("", "session", "list"), 0, id+"  running", "")

	// Every address a command could try, as the host names it and as the
	// command does through its mount of the home directory.
	type addr struct{ host, inside string }
	addrs := []addr{{filepath.Join(h.state, "sessions.sock"), "/mnt/home/state/sessions.sock"}}
	if b, err := os.ReadFile(filepath.Join(h.state, "sessions.lock")); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			addrs = append(addrs, addr{"@" + f[1], "@" + f[1]})
		}
	}
	reached := 0
	for _, a := range addrs {
		out, _ := exec.Command(filepath.Join(toolsDir, "probe"), "session-list", a.host).CombinedOutput()
		if strings.HasPrefix(string(out), "ok") {
			reached++
			if !strings.Contains(string(out), id) {
				t.Errorf("the session server at %s, from outside: %s", a.host, out)
			}
		}
	}
	if reached == 0 {
		t.Fatalf("positive control: the session server is reachable from outside at none of %v", addrs)
	}

	// A root server without namespaces runs commands as uid 65534 and refuses a
	// mount that uid cannot reach: the test's directories are opened for search,
	// so that what stops the probe is the sandbox.
	searchableAbove(t, h.dir)
	home := map[string]any{"hostPath": h.dir, "sandboxPath": "/mnt/home", "mode": "ro"}
	on := map[string]any{"allowNetwork": true}
	for _, m := range serverModes(t) {
		t.Run(m.name, func(t *testing.T) {
			s := startEnv(t, m.env)
			for _, a := range addrs {
				wantDenied(t, "the session server at "+a.inside+" over MCP", s.probe([]map[string]any{home}, on, "session-list", a.inside))
			}
		})
	}
	for _, a := range addrs {
		r := h.run("", "exec", "--network", "--mount", toolsDir+":/mnt/tools", "--mount", h.dir+":/mnt/home", "--", "/mnt/tools/probe", "session-list", a.inside)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "denied:") {
			t.Errorf("the session server at %s from autobox exec: want denied, got %s", a.inside, r)
		}
	}
	// A native task harness runs under the same sandbox, with network.
	repo := filepath.Join(h.dir, "repo")
	for _, argv := range [][]string{{"git", "init", "-q", repo}, {"git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "initial"}} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	for _, a := range addrs {
		r := h.run("", "task", "run", "--kind", "native", "--project", repo, "--tasks-dir", filepath.Join(h.dir, "tasks"), "--id", "probe",
			"--ro", toolsDir, "--ro", h.state, "--", filepath.Join(toolsDir, "probe"), "session-list", a.host)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "denied:") {
			t.Errorf("the session server at %s from a native task harness: want denied, got %s", a.host, r)
		}
	}
	// The session is untouched, and the server still answers its user.
	h.want(h.run("", "session", "list"), 0, id+"  running", "")
}

// TestCLISession: `autobox exec --yield` starts a session in a session server
// of the user's own, `autobox session` drives it, and the server ends by itself
// after its last session, leaving nothing.
func TestCLISession(t *testing.T) {
	requireSandbox(t)
	// An earlier test's session server ends 5 s after its last session: gone
	// first, so that the one found below is this test's.
	waitSessionServerGone(t)
	h := newCLIHome(t)
	h.sessions = true
	r := h.run("", "exec", "--yield", "2s", "--timeout", "1m", "--", "sh", "-c", "echo hi; sleep 1; echo bye >&2; exit 3")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(id, "s-") || !strings.Contains(r.stderr, "hi\n") || !strings.Contains(r.stderr, "autobox session poll") {
		t.Fatalf("exec --yield: %s", r)
	}
	server := 0
	for _, p := range procsOf(bin) {
		if strings.Contains(p, " session serve ") {
			if server != 0 {
				t.Errorf("two session servers: %v", procsOf(bin))
			}
			server, _ = strconv.Atoi(p[:strings.IndexByte(p, ':')])
		}
	}
	if server == 0 {
		t.Fatalf("no session server runs: %v", procsOf(bin))
	}
	h.want(h.run("", "session", "list"), 0, id+"  running", "")
	var final cliRun
	var stderr string
	for i := 0; i < 10; i++ {
		final = h.run("", "session", "poll", "--yield", "5s", id)
		if stderr += final.stderr; final.code != 0 {
			break
		}
	}
	if final.code != 3 || stderr != "bye\n" {
		t.Errorf("polls to the end: stderr %q, then %s", stderr, final)
	}
	h.want(h.run("", "session", "poll", id), 125, "", `unknown or ended session "`+id+`": its final result was read already`)
	h.want(h.run("", "session", "poll", "s-nothing"), 125, "", "autobox session list shows the open ones")

	r = h.run("", "exec", "--yield", "0", "--", "cat")
	id = strings.TrimSpace(r.stdout)
	h.want(h.run("", "session", "write", "--yield", "5s", id, "hello\n"), 0, "hello\n", "")
	// --until: the answer goes at the line that matches, however long --yield.
	h.want(h.run("", "session", "write", "--json", "--yield", "30s", "--until", "^t[a-z]o$", id, "one\ntwo\n"), 0, `"matched":true`, "")
	h.want(h.run("", "session", "poll", "--until", "(", id), 125, "", "until is not a regular expression")
	w := h.run("last", "session", "write", "--yield", "5s", "--close-stdin", id, "-")
	for w.code == 0 && !strings.Contains(w.stdout, "last") {
		w = h.run("", "session", "poll", "--yield", "5s", id)
	}
	if !strings.Contains(w.stdout, "last") {
		t.Errorf("write from stdin: %s", w)
	}
	// Its final result, if that answer was not it (an unread one keeps the
	// session server).
	h.run("", "session", "poll", "--yield", "5s", id)

	r = h.run("", "exec", "--yield", "2s", "--tty", "--", "sh", "-i")
	id = strings.TrimSpace(r.stdout)
	// --until: the terminal's echo of the line may come alone, before the answer.
	h.want(h.run("", "session", "write", "--yield", "30s", "--until", "^42", id, "echo $((6*7))\n"), 0, "42", "")
	// close did what it was asked: exit 0 (a set -e script goes on), and the
	// result says the command was killed.
	h.want(h.run("", "session", "close", "--json", id), 0, `"killed":true`, "")
	h.want(h.run("", "session", "close", id), 125, "", "unknown or ended session")
	h.want(h.run("", "exec", "--tty", "--", "true"), 125, "", "--tty needs --yield")

	// The server ends a few seconds after its last session, and takes nothing
	// with it that it should not have left.
	waitSessionServerGone(t)
	checkNothingLeft(t, server)
	h.want(h.run("", "session", "list"), 0, "ID", "")
}
