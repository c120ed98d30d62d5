// Package etcsecrets finds what of the host's /etc a command may not read.
//
// Commands see /etc as the host has it, read-only, so that programs find their
// configuration (Java's security files, fonts, Chromium's defaults, ...) as
// they do outside. What is secret stays out (policy.Sandbox.Hidden): the
// well-known secrets of List, wherever they are world-readable by mistake,
// and every file or directory below /etc that is not world-readable (a root
// server's commands are uid 0, which would otherwise read root's 0600 files).
//
// A Scanner walks /etc once and again after inotify says something below it
// changed (an entry made, removed, renamed or its mode changed), so a call
// pays for nothing but a lock. Where inotify is not to be had, it walks again
// when its last walk is older than a second; so it does in its first second,
// before it watches (see Scanner.Hidden).
package etcsecrets

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// List are the secrets of /etc by name, relative to it (path.Match patterns):
// password hashes, sudo rules, host keys, TLS and VPN private keys,
// Kerberos keytabs, saved Wi-Fi and VPN connections, registry credentials,
// cluster admin configs, and etckeeper's history of all of these.
var List = []string{
	"shadow", "shadow-", "gshadow", "gshadow-", "security/opasswd",
	"sudoers", "sudoers.d", "doas.conf",
	"ssh/ssh_host_*_key", "ssh/*_key",
	"ssl/private", "pki/tls/private", "pki/CA/private", "letsencrypt",
	"krb5.keytab", "krb5kdc",
	"NetworkManager/system-connections", "wireguard", "netplan", "wpa_supplicant",
	"ipsec.secrets", "ipsec.d/private", "swanctl/private", "openvpn",
	"ppp/chap-secrets", "ppp/pap-secrets",
	"docker/key.json", "docker/certs.d", "containers/auth.json",
	"kubernetes/admin.conf", "kubernetes/pki", "rancher",
	"apt/auth.conf", "apt/auth.conf.d",
	"credstore", "credstore.encrypted", "libvirt/secrets",
	"mysql/debian.cnf", "postfix/sasl_passwd", "ldap.secret", "pam_ldap.secret", "libnss-ldap.secret",
	"gitlab-runner", ".git", ".etckeeper",
}

// Scanner knows the hidden paths of one /etc.
type Scanner struct {
	root string

	mu      sync.Mutex
	hidden  []string
	dirty   bool
	watched bool      // inotify watches every directory walked
	walked  time.Time // when, without inotify
	ino     int       // the inotify descriptor, -1 if none
	wd      map[int]string
	started bool // watching has begun (see Hidden)

	readable, readableOf []string // Readable, and the Hidden it was narrowed from
}

// New returns a scanner of root (normally "/etc").
func New(root string) *Scanner {
	return &Scanner{root: root, dirty: true, ino: -1}
}

// Hidden returns the paths below root a command may not read, sorted: each is
// neither followed into nor listed beyond itself. The first call walks root
// without watching it, and its answer stands for a second as where there is no
// inotify; the first call after that starts watching and walks again. A
// process that runs one command (a command line) pays for no watches, and a
// server for one walk more, once.
func (s *Scanner) Hidden() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started && !s.dirty && time.Since(s.walked) > time.Second {
		s.started = true
		s.startWatching()
		s.dirty = true
	}
	if s.dirty || !s.watched && time.Since(s.walked) > time.Second {
		s.hidden = s.scan()
		s.dirty, s.walked = false, time.Now()
		s.readableOf = nil // narrowed again (Readable)
	}
	return s.hidden
}

// scan walks root, with s.mu held. Each directory is read by its descriptor
// and its entries' modes asked of it (fstatat), not by their whole paths:
// walking a Debian /etc of 1,500 entries, that halves the time of a command
// line's one call, which pays for one walk.
func (s *Scanner) scan() []string {
	var hidden []string
	fd, err := unix.Open(s.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return hidden
	}
	s.addWatch(s.root)
	s.walk(fd, s.root, ".", &hidden)
	slices.Sort(hidden)
	return hidden
}

// walk adds what of directory fd (at p, rel below root) is hidden, and closes fd.
func (s *Scanner) walk(fd int, p, rel string, hidden *[]string) {
	dir := os.NewFile(uintptr(fd), p)
	entries, err := dir.ReadDir(-1)
	if err != nil && p != s.root {
		*hidden = append(*hidden, p) // cannot be read: cannot be shown
	}
	patterns := secretsIn()[rel]
	for _, d := range entries {
		name := d.Name()
		ep, erel := p+"/"+name, name
		if rel != "." {
			erel = rel + "/" + name
		}
		if matchesAny(patterns, name) {
			*hidden = append(*hidden, ep)
			continue
		}
		if d.Type()&fs.ModeSymlink != 0 {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone meanwhile
		}
		isDir := uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR
		if !worldReadableMode(uint32(st.Mode)&0o777, isDir) {
			*hidden = append(*hidden, ep)
			continue
		}
		if !isDir {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				*hidden = append(*hidden, ep)
			}
			continue
		}
		s.addWatch(ep)
		s.walk(sub, ep, erel, hidden)
	}
	dir.Close()
}

// secretsIn is List by directory: the base-name patterns of the secrets in
// each directory below root ("." for root itself). No pattern of List has a
// wildcard in its directory part.
var secretsIn = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, pat := range List {
		d, b := path.Split(pat)
		d = strings.TrimSuffix(d, "/")
		if d == "" {
			d = "."
		}
		m[d] = append(m[d], b)
	}
	return m
})

func matchesAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// worldReadable: a file any user may read, a directory any user may list
// and enter.
func worldReadableMode(perm uint32, dir bool) bool {
	if dir {
		return perm&0o005 == 0o005
	}
	return perm&0o004 != 0
}
