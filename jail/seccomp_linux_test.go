package jail

import (
	"os"
	"runtime"
	"testing"

	"github.com/autobox-dev/autobox/jail/seccomp"
)

// TestSeccompVictim runs the filter for real (the interpreter tests are in
// package seccomp): every denied call fails with EPERM in the sandbox, and a
// sample of them fails differently without it, which shows that the EPERM
// comes from the filter and not from the kernel's own checks.
func TestSeccompVictim(t *testing.T) {
	requireJail(t)
	arch, _ := seccomp.ArchFor(runtime.GOARCH)
	var probes []string
	want := map[string]string{}
	for _, name := range seccomp.Denied {
		if _, ok := arch.Nr(name); ok {
			probes = append(probes, "sys:"+name)
			want["sys:"+name] = "EPERM"
		}
	}
	special := map[string]string{
		"sys:clone-newuser": "EPERM", "sys:clone-plain": "ok", "sys:clone3": "ENOSYS",
		"sys:tiocsti": "EPERM", "sys:tioclinux": "EPERM", "sys:tcgets": "ENOTTY",
		"sys:personality-query": "ok", "sys:personality-norandom": "EPERM",
	}
	for p, w := range special {
		probes = append(probes, p)
		want[p] = w
	}
	got, _, _ := startHelper(t, Spec{Sandbox: basePolicy(t)}, probes...)
	expect(t, "sandboxed", got, want)

	if os.Geteuid() != 0 {
		t.Skip("positive controls need root: unprivileged, the kernel itself answers EPERM")
	}
	got, _, _ = startHelper(t, Spec{Unsafe: true}, probes...)
	control := []string{"mount", "umount2", "chroot", "pivot_root", "unshare", "setns", "bpf", "keyctl",
		"perf_event_open", "userfaultfd", "io_uring_setup", "open_by_handle_at",
		"name_to_handle_at", "add_key", "request_key", "fsopen", "open_tree",
		"move_mount", "fspick", "mount_setattr", "swapon", "acct"}
	for _, name := range control {
		if r := got["sys:"+name]; r == "EPERM" || r == "" {
			t.Errorf("unsafe: %s = %q, want the kernel's own error", name, r)
		}
	}
	expect(t, "unsafe", got, map[string]string{
		"sys:clone-newuser": "ok", "sys:clone-plain": "ok", "sys:clone3": "EINVAL",
		"sys:tiocsti": "ENOTTY", "sys:tioclinux": "ENOTTY", "sys:tcgets": "ENOTTY",
		"sys:personality-query": "ok", "sys:personality-norandom": "ok",
	})
	t.Logf("unfiltered results: %v", got)
}
