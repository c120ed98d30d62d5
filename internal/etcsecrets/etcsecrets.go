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
// when its last walk is older than a second.
package etcsecrets

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"
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
}

// New returns a scanner of root (normally "/etc").
func New(root string) *Scanner {
	s := &Scanner{root: root, dirty: true, ino: -1}
	s.startWatching()
	return s
}

// Hidden returns the paths below root a command may not read, sorted: each is
// neither followed into nor listed beyond itself.
func (s *Scanner) Hidden() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirty || !s.watched && time.Since(s.walked) > time.Second {
		s.hidden = s.scan()
		s.dirty, s.walked = false, time.Now()
	}
	return s.hidden
}

// scan walks root, with s.mu held.
func (s *Scanner) scan() []string {
	var hidden []string
	_ = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != s.root && !errors.Is(err, fs.ErrNotExist) {
				hidden = append(hidden, p) // cannot be read: cannot be shown
			}
			return nil
		}
		if p == s.root {
			s.addWatch(p)
			return nil
		}
		if secret(s.root, p) {
			hidden = append(hidden, p)
			return skip(d)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if !worldReadable(info.Mode()) {
			hidden = append(hidden, p)
			return skip(d)
		}
		if d.IsDir() {
			s.addWatch(p)
		}
		return nil
	})
	slices.Sort(hidden)
	return hidden
}

func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// secret reports whether p (below root) is one of List.
func secret(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	for _, pat := range List {
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
	}
	return false
}

// worldReadable: a file any user may read, a directory any user may list
// and enter.
func worldReadable(m fs.FileMode) bool {
	if m.IsDir() {
		return m.Perm()&0o005 == 0o005
	}
	return m.Perm()&0o004 != 0
}
