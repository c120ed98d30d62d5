//go:build linux

package test

import "testing"

// Issue 20 item 10: a network namespace does not confine every socket
// family. vsock reaches the hypervisor's services past it (this VM's host
// offers some); it is refused with allowHosts, without network and with the
// whole network alike, while the families the namespace confines work.

// socketOf is a script that makes one socket of family (a name in Python's
// socket module) and prints "ok" or "denied: errno".
func socketOf(family, typ string) []string {
	return []string{"python3", "-c", `import socket, sys
try:
    socket.socket(getattr(socket, sys.argv[1]), getattr(socket, sys.argv[2])).close()
    print("ok")
except OSError as e:
    print("denied:", e.errno)
    sys.exit(1)`, family, typ}
}

func TestVsockRefused(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		settings := map[string]map[string]any{
			"network off":  {},
			"allowNetwork": {"allowNetwork": true},
		}
		if m.ns {
			settings["allowHosts"] = map[string]any{"allowHosts": []string{"example.test"}}
		}
		for name, extra := range settings {
			run := func(family, typ string) execOut {
				a := map[string]any{"command": socketOf(family, typ)}
				for k, v := range extra {
					a[k] = v
				}
				o, _ := s.exec(a)
				return o
			}
			o := run("AF_VSOCK", "SOCK_STREAM")
			if o.Stdout != "denied: 97\n" { // EAFNOSUPPORT
				t.Errorf("%s: AF_VSOCK: %+v", name, o)
			}
			// Positive control: an IP socket, where the setting allows one (a
			// namespace with loopback alone has one without network).
			if name != "network off" || m.ns {
				wantAllowed(t, name+": AF_INET", run("AF_INET", "SOCK_STREAM"))
			}
			if name != "network off" {
				wantAllowed(t, name+": AF_NETLINK", run("AF_NETLINK", "SOCK_RAW"))
			}
		}
	})
}

// TestVsockRefusedCLI: the same on the command line, with --allow-host
// where the mode has namespaces.
func TestVsockRefusedCLI(t *testing.T) {
	eachCLIMode(t, func(t *testing.T, h *cliHome, m serverMode) {
		flags := [][]string{{"--network"}}
		if m.ns {
			flags = append(flags, []string{"--allow-host", "example.test"})
		}
		for _, f := range flags {
			r := h.run("", append(append([]string{"exec"}, f...), append([]string{"--"}, socketOf("AF_VSOCK", "SOCK_STREAM")...)...)...)
			if r.stdout != "denied: 97\n" {
				t.Errorf("%v: AF_VSOCK: %s", f, r)
			}
			r = h.run("", append(append([]string{"exec"}, f...), append([]string{"--"}, socketOf("AF_INET", "SOCK_STREAM")...)...)...)
			if r.stdout != "ok\n" {
				t.Errorf("%v: AF_INET: %s", f, r)
			}
		}
	})
}
