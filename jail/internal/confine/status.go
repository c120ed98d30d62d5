package confine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/policy"
)

// Sentinel errors that callers branch on.
var (
	// ErrUnsupported: this host cannot enforce what the policy needs (no
	// Landlock, an old Landlock ABI, no seccomp, an unsupported platform).
	ErrUnsupported = restrict.ErrUnsupported
	// ErrPolicy: the policy cannot be expressed (for example a DenyWrite
	// path beneath a ReadWrite path, which Landlock cannot subtract).
	ErrPolicy = errors.New("jail: policy cannot be enforced as written")
	// ErrSandbox: applying the restrictions failed in the launcher.
	ErrSandbox = restrict.ErrSandbox
)

// Landlock ABI versions that matter here (Documentation/userspace-api/landlock.rst).
const (
	ABIRefer    = 2 // LANDLOCK_ACCESS_FS_REFER
	ABITruncate = 3 // LANDLOCK_ACCESS_FS_TRUNCATE
	ABINet      = 4 // LANDLOCK_ACCESS_NET_{BIND,CONNECT}_TCP
	ABIIoctlDev = 5 // LANDLOCK_ACCESS_FS_IOCTL_DEV
	ABIScope    = 6 // LANDLOCK_SCOPE_{SIGNAL,ABSTRACT_UNIX_SOCKET}

	// MinLandlockABI is the oldest ABI the jail runs with: below 3 a
	// sandboxed process could truncate any file it can read (truncate(2) and
	// open(O_RDONLY|O_TRUNC) are not covered), so read-only would not mean
	// read-only.
	MinLandlockABI = ABITruncate
)

// Status is what this host can enforce, for `autobox doctor` and for the
// fail-closed check before every sandboxed start.
type Status struct {
	// LandlockABI is the Landlock ABI version, 0 when Landlock is missing.
	LandlockABI int
	// Landlock says why Landlock is missing ("" when present).
	Landlock string
	// Seccomp is true when seccomp filters with SECCOMP_RET_ERRNO work.
	Seccomp bool
	// SeccompArch is the architecture the filter is built for ("x86_64",
	// "aarch64"); "" when the jail has no syscall table for this CPU.
	SeccompArch string
	// NoNewPrivs is true when PR_SET_NO_NEW_PRIVS is available.
	NoNewPrivs bool
	// Platform is GOOS/GOARCH, for messages.
	Platform string
}

// TCPDenied reports whether Landlock itself denies TCP bind/connect; without
// it seccomp still refuses to create non-AF_UNIX sockets.
func (s Status) TCPDenied() bool { return s.LandlockABI >= ABINet }

// Scoped reports whether signals and abstract unix sockets are confined to
// the sandbox (Landlock scoping). Below ABI 6 they are not, and Check does not
// refuse: the filesystem and network rules still hold.
func (s Status) Scoped() bool { return s.LandlockABI >= ABIScope }

// String is a one-line summary for `autobox doctor`.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", s.Platform)
	if s.LandlockABI == 0 {
		fmt.Fprintf(&b, "Landlock missing (%s)", s.Landlock)
	} else {
		fmt.Fprintf(&b, "Landlock ABI %d (tcp deny %v, signal/abstract-socket scoping %v)", s.LandlockABI, s.TCPDenied(), s.Scoped())
	}
	fmt.Fprintf(&b, ", seccomp %v (%s), no_new_privs %v", s.Seccomp, s.SeccompArch, s.NoNewPrivs)
	return b.String()
}

// Check returns nil if p can be enforced on this host, otherwise an error
// naming everything that is missing (wrapping ErrUnsupported) or what in p
// cannot be expressed (wrapping ErrPolicy).
func (s Status) Check(p *policy.Sandbox) error {
	if p == nil {
		return fmt.Errorf("%w: nil sandbox policy", ErrPolicy)
	}
	if err := checkPolicy(p); err != nil {
		return err
	}
	var missing []string
	switch {
	case s.LandlockABI == 0:
		missing = append(missing, fmt.Sprintf("Landlock is not available (%s)", s.Landlock))
	case s.LandlockABI < MinLandlockABI:
		missing = append(missing, fmt.Sprintf("Landlock ABI %d < %d needed to deny truncating read-only files (Linux >= 6.2)", s.LandlockABI, MinLandlockABI))
	}
	if !s.Seccomp {
		missing = append(missing, "seccomp filters are not available")
	}
	if s.SeccompArch == "" {
		missing = append(missing, fmt.Sprintf("no seccomp syscall table for %s", s.Platform))
	}
	if !s.NoNewPrivs {
		missing = append(missing, "PR_SET_NO_NEW_PRIVS is not available")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrUnsupported, strings.Join(missing, "; "))
	}
	return nil
}

// checkPolicy rejects what Landlock cannot express: it can only add rights,
// so a DenyWrite path beneath (or equal to) a ReadWrite path would be writable.
func checkPolicy(p *policy.Sandbox) error {
	for _, d := range p.DenyWrite {
		for _, rw := range p.ReadWrite {
			if policy.Within(d, rw) {
				return fmt.Errorf("%w: DenyWrite %s is inside ReadWrite %s", ErrPolicy, d, rw)
			}
		}
	}
	for _, list := range [][]string{p.ReadOnly, p.ReadWrite, p.DenyWrite, p.Devices} {
		for _, path := range list {
			if !strings.HasPrefix(path, "/") {
				return fmt.Errorf("%w: path %q is not absolute", ErrPolicy, path)
			}
		}
	}
	return nil
}
