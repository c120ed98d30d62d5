//go:build !linux

package jail

import (
	"fmt"
	"os"
	"runtime"

	"github.com/autobox-dev/autobox/policy"
)

// This platform has neither Landlock nor seccomp: every entry point fails
// closed with an error that names what is missing.

var errPlatform = fmt.Errorf("%w: Landlock and seccomp are Linux-only, this is %s/%s", ErrUnsupported, runtime.GOOS, runtime.GOARCH)

// Probe reports that nothing can be enforced here.
func Probe() Status {
	return Status{Platform: runtime.GOOS + "/" + runtime.GOARCH, Landlock: "not Linux"}
}

// RestrictThread fails: nothing can be enforced here.
func RestrictThread(p *policy.Sandbox) error { return errPlatform }

// WorkerRefusals finds nothing: no JS worker has a seccomp filter here.
func WorkerRefusals(stderr []byte) []string { return nil }

// Tree is never created on this platform.
type Tree struct{}

// Start fails: there is no launcher on this platform, even for Unsafe specs
// (the process-tree handling is Linux-only too).
func Start(exe string, spec *Spec, stdout, stderr *os.File) (*Tree, error) {
	return nil, errPlatform
}

// Pool is never useful on this platform.
type Pool struct{}

// NewPool returns a pool whose Start fails.
func NewPool(exe string, size int, base *policy.Sandbox) *Pool { return &Pool{} }

// Start fails: there is no launcher on this platform.
func (p *Pool) Start(spec *Spec, stdout, stderr *os.File, memory int64) (*Tree, error) {
	return nil, errPlatform
}

// StartInteractive fails: there is no launcher on this platform.
func (p *Pool) StartInteractive(spec *Spec, stdout, stderr *os.File, memory int64, in *Interactive) (*Tree, error) {
	return nil, errPlatform
}

// Close does nothing.
func (p *Pool) Close() {}

// Pid returns 0.
func (t *Tree) Pid() int { return 0 }

// Wait reports that nothing ran.
func (t *Tree) Wait() (Result, error) { return Result{ExitCode: -1}, errPlatform }

// OOMKilled returns false.
func (t *Tree) OOMKilled() bool { return false }

// Kill does nothing.
func (t *Tree) Kill() {}

// Isolations reports that launchers add nothing here: there are none.
func Isolations() Isolation { return Isolation{} }

// KernelProcessLimit returns false.
func (t *Tree) KernelProcessLimit() bool { return false }

// ForksRefused returns 0.
func (t *Tree) ForksRefused() int { return 0 }

// Shmem returns 0.
func (t *Tree) Shmem() int64 { return 0 }

// IPC is 0: no IPC namespace here.
func (t *Tree) IPC() int64 { return 0 }

// MemoryCgroup: none here.
func (t *Tree) MemoryCgroup() bool { return false }

// Usage returns zeros.
func (t *Tree) Usage() policy.Usage { return policy.Usage{} }

// CommandCredential reports the uid and gid commands run as: this process's.
func CommandCredential() (uid, gid int, drop bool) { return os.Getuid(), os.Getgid(), false }

// Isolation names the mode the command ran in: none here.
func (t *Tree) Isolation() string { return "" }

// NoNamespacesWhy says why commands get no namespaces: none here.
func NoNamespacesWhy() string { return "there are no namespaces on " + runtime.GOOS }

// ProcessCeiling is 0: no kernel limit here.
func (t *Tree) ProcessCeiling() int { return 0 }

// UnixGuard is false: no guard here.
func UnixGuard() bool { return false }

// NoPrivateNetworkWhy is "": see NoNamespacesWhy.
func NoPrivateNetworkWhy() string { return "" }

// CommandAccess checks nothing: commands run as this process's uid.
func CommandAccess(string, bool) error { return nil }

// KernelFSWrites checks nothing: no kernel pseudo-filesystem is known here
// that a command could write to weaken its sandbox.
func KernelFSWrites([]string) error { return nil }
