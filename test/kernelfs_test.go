//go:build linux

package test

import (
	"strings"
	"testing"
)

// TestKernelFSNotWritable: no command may write a kernel pseudo-filesystem
// through a read-write mount: /proc/sys (a root server's command, uid 0 without
// capabilities, wrote the kernel's sysctls through one, kernel.core_pattern
// among them: a program the kernel runs as root on the host), a cgroup
// hierarchy (a command moved itself out of its pids cgroup, leaving its
// limits), /sys, which holds the cgroup hierarchies, and /dev/pts. Each is
// refused before anything runs, in every mode, over MCP and the command line.
// Positive control: the same paths read-only are read.
func TestKernelFSNotWritable(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t) // first: no server of the test may run beside it
	h.want(h.run("", "exec", "--mount", "/proc/sys:/mnt/k:rw", "--", "true"), 125, "", "read-write /proc/sys is on the kernel's proc filesystem")
	cg := "/sys/fs/cgroup"
	if v2 := v2Mount(); v2 != "" {
		cg = v2
	}
	for mode, s := range holeServers(t) {
		t.Run(mode, func(t *testing.T) {
			for _, p := range []string{"/proc/sys", cg, "/sys", "/dev/pts"} {
				m := []map[string]any{{"hostPath": p, "sandboxPath": "/mnt/k", "mode": "rw"}}
				o, isErr := s.exec(map[string]any{"command": bash(`echo ran`), "mounts": m})
				if !isErr || o.Stdout == "ran\n" || !strings.Contains(o.Stderr, "which no command may write") {
					t.Errorf("rw mount of %s: %+v", p, o)
				}
				m[0]["mode"] = "ro"
				if o, isErr := s.exec(map[string]any{"command": bash(`ls /mnt/k >/dev/null && echo read`), "mounts": m}); isErr || o.Stdout != "read\n" {
					t.Errorf("ro mount of %s: %+v", p, o)
				}
			}
		})
	}
}
