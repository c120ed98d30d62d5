package test

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/internal/etcsecrets"
)

// TestEtcSecrets: a command reads /etc as the host has it (positive
// controls: hostname, os-release, fonts, Java's security files), but none of
// its secrets: those of etcsecrets.List that exist here, and, as root, a
// world-readable canary at several of those names and a file only root may
// read (a root server's commands are uid 0, which owns such files), while a
// world-readable file beside them stays readable.
func TestEtcSecrets(t *testing.T) {
	requireSandbox(t)
	t.Run("default", func(t *testing.T) { etcSecrets(t, start(t)) })
	t.Run("no-namespaces", func(t *testing.T) { etcSecrets(t, startEnv(t, []string{"AUTOBOX_NO_NAMESPACES=1"})) })
}

// etcCanaries makes, as root, secrets at names of etcsecrets.List that this
// host lacks, world-readable, and a 0600 file, and the control beside them;
// they are removed at the end of the test. It returns the secrets and the
// control.
func etcCanaries(t *testing.T) (secrets []string, control string) {
	if os.Geteuid() != 0 {
		return nil, ""
	}
	tag := fmt.Sprintf("autobox-test-%d", os.Getpid())
	made := []string{}
	place := func(p string, mode os.FileMode) bool {
		if _, err := os.Lstat(p); err == nil {
			return false // the host's own: leave it alone
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false
		}
		if err := os.WriteFile(p, []byte("canary "+tag+"\n"), mode); err != nil {
			return false
		}
		os.Chmod(p, mode)
		made = append(made, p)
		return true
	}
	// Names no service reads unasked (not sudoers.d, whose files sudo parses).
	for _, rel := range []string{"krb5.keytab", "ipsec.secrets", "ssh/ssh_host_" + tag + "_key", "wireguard/" + tag + ".conf",
		"letsencrypt/" + tag + ".pem", "credstore/" + tag} {
		if p := "/etc/" + rel; place(p, 0o644) {
			secrets = append(secrets, p)
		}
	}
	if p := "/etc/" + tag + "-rootonly"; place(p, 0o600) {
		secrets = append(secrets, p)
	}
	control = "/etc/" + tag + "-public"
	if !place(control, 0o644) {
		control = ""
	}
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
		for _, d := range []string{"/etc/wireguard", "/etc/letsencrypt", "/etc/credstore", "/etc/ssh"} {
			os.Remove(d) // only if we made it: a directory with anything else in it stays
		}
	})
	return secrets, control
}

func etcSecrets(t *testing.T, s *session) {
	canaries, control := etcCanaries(t)
	read := func(p string) execOut {
		o, _ := s.exec(map[string]any{"command": []string{"/bin/cat", p}, "timeoutMs": 30000})
		return o
	}
	// Positive controls: what programs read.
	for _, p := range []string{"/etc/hostname", "/etc/os-release", "/etc/hosts", "/etc/nsswitch.conf", control} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if o := read(p); o.code() != 0 {
			t.Errorf("cat %s: want it readable, got exit %d %q", p, o.code(), o.Stderr)
		}
	}
	if o, _ := s.exec(map[string]any{"command": bash("ls /etc | grep -c ."), "timeoutMs": 30000}); o.code() != 0 {
		t.Errorf("listing /etc: %+v", o)
	}
	// The host's secrets that exist here, and the canaries.
	var secrets []string
	for _, pat := range etcsecrets.List {
		m, _ := filepath.Glob("/etc/" + pat)
		secrets = append(secrets, m...)
	}
	secrets = append(secrets, canaries...)
	if len(secrets) == 0 {
		t.Skip("no secret of the list on this host, and not root to make some")
	}
	for _, p := range secrets {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		script := "cat " + shellQuote(p) + " && echo READ"
		if fi.IsDir() {
			// Its names may be listed; no file below it may be read.
			script = "find " + shellQuote(p) + ` -type f | while read -r f; do cat "$f" && echo READ; done`
		}
		o, _ := s.exec(map[string]any{"command": bash(script), "timeoutMs": 30000})
		if strings.Contains(o.Stdout, "READ") || strings.Contains(o.Stdout, "canary") {
			t.Errorf("%s was read inside: %q", p, o.Stdout)
		}
	}
	t.Logf("%d secrets checked: %v", len(secrets), secrets)
}

// TestEtcIdentity: with a root of its own, a command finds itself, root and
// nobody in /etc/passwd and /etc/group (whoami, getpwuid), under the user's
// own name and home, and no other account of the host.
func TestEtcIdentity(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("without a private root the host's own passwd is read (its accounts are not secret there)")
	}
	s := start(t)
	o, _ := s.exec(map[string]any{"command": bash("whoami; id -gn; cat /etc/passwd; echo ---; cat /etc/group"), "timeoutMs": 30000})
	if o.code() != 0 {
		t.Fatalf("whoami: %+v", o)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(o.Stdout, "\n")
	if lines[0] != me.Username {
		t.Errorf("whoami = %q, want %q", lines[0], me.Username)
	}
	passwd, group, _ := strings.Cut(strings.Join(lines[2:], "\n"), "---\n")
	want := []string{"root:x:0:0:", "nobody:x:65534:"}
	if me.Uid != "0" {
		want = append(want, me.Username+":x:"+me.Uid+":"+me.Gid+":"+me.Name+":"+me.HomeDir+":")
	}
	for _, w := range want {
		if !strings.Contains(passwd, w) {
			t.Errorf("passwd lacks %q:\n%s", w, passwd)
		}
	}
	if n := strings.Count(strings.TrimSpace(passwd), "\n") + 1; n != len(want) {
		t.Errorf("passwd has %d accounts, want %d (no other account of the host):\n%s", n, len(want), passwd)
	}
	if !strings.Contains(group, "root:x:0:") || !strings.Contains(group, "nogroup:x:65534:") {
		t.Errorf("group:\n%s", group)
	}
	// HOME stays the call's scratch dir.
	if o, _ := s.exec(map[string]any{"command": bash(`test "$HOME" != ` + shellQuote(me.HomeDir) + ` && test -w "$HOME" && echo ok`), "timeoutMs": 30000}); o.Stdout != "ok\n" {
		t.Errorf("HOME: %+v", o)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestEtcSecretReplaced: a secret the host replaces while a command runs (a
// new file renamed over it, as passwd(1) and useradd(8) do) is no more
// readable than the old one was. As root, with a world-readable canary.
func TestEtcSecretReplaced(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the canary is made in /etc")
	}
	secret := "/etc/krb5.keytab"
	if _, err := os.Lstat(secret); err == nil {
		t.Skip("this host has a " + secret + " of its own")
	}
	if err := os.WriteFile(secret, []byte("old canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	for _, m := range []struct {
		name string
		env  []string
	}{{"default", nil}, {"no-namespaces", []string{"AUTOBOX_NO_NAMESPACES=1"}}} {
		t.Run(m.name, func(t *testing.T) {
			s := startEnv(t, m.env)
			flag := compatDir(t)
			o := s.startSession(map[string]any{"command": bash(`cat /etc/krb5.keytab; echo started; while [ ! -e /mnt/f/go ]; do sleep 0.05; done; cat /etc/krb5.keytab && echo READ`),
				"mounts": []map[string]any{{"hostPath": flag, "sandboxPath": "/mnt/f", "mode": "ro"}}, "timeoutMs": 30000})
			if out, _ := s.until(o.SessionID, "started", o.Stdout); strings.Contains(out, "canary") {
				t.Fatalf("the secret was read before it was replaced: %q", out)
			}
			next := "/etc/.krb5.keytab.new"
			if err := os.WriteFile(next, []byte("new canary\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(next, secret); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(flag, "go"), "")
			out, _ := s.finish(o.SessionID)
			if strings.Contains(out, "canary") || strings.Contains(out, "READ") {
				t.Errorf("the replaced secret was read: %q", out)
			}
		})
	}
}
