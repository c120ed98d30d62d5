package confine

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

const (
	// fsRightsABI1 is every filesystem right of Landlock ABI 1.
	fsRightsABI1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM

	// fileRights are the rights that make sense on a file; Landlock rejects a
	// rule that grants directory rights on a non-directory.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	readRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR

	// deviceRights need no TRUNCATE: `> /dev/null` opens with O_TRUNC, but
	// O_TRUNC means nothing on a non-regular file and Landlock does not ask.
	deviceRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS is every filesystem right that ABI abi knows, so that anything
// not granted by a rule is denied. Rights of ABIs newer than this code knows
// (the kernel is newer than x/sys's documentation of it) are left unhandled.
func handledFS(abi int) uint64 {
	r := uint64(fsRightsABI1)
	if abi >= ABIRefer {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= ABITruncate {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= ABIIoctlDev {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// pathRule grants access beneath one path.
type pathRule struct {
	path   string
	access uint64
	// noFollow: a symbolic link on the way to path refuses the rule
	// (policy.Sandbox.NoFollow).
	noFollow bool
}

// landlockPlan is the ruleset for p at ABI abi, before any syscall.
//
// loopback says the thread is in a network namespace of its own that holds
// loopback alone: TCP cannot leave it, so a command without network may
// still bind and connect there (a test suite's own server, say).
func landlockPlan(p *policy.Sandbox, abi int, loopback bool) (attr unix.LandlockRulesetAttr, size uintptr, rules []pathRule) {
	handled := handledFS(abi)
	attr.Handled_access_fs = handled
	size = unsafe.Offsetof(attr.Handled_access_net)
	if abi >= ABINet {
		if !p.AllowNetwork && !loopback {
			// Handled with no rule: every TCP bind and connect is denied.
			attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
		size = unsafe.Offsetof(attr.Scoped)
	}
	if abi >= ABIScope {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		size = unsafe.Offsetof(attr.Quiet_access_fs)
	}

	exec := uint64(0)
	if p.AllowExec {
		exec = unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	all := handled &^ unix.LANDLOCK_ACCESS_FS_EXECUTE
	for _, path := range p.ReadOnly {
		rules = append(rules, rulesBut(path, p.Hidden, readRights|exec, p.NoFollow)...)
	}
	// A read-write path is split the same way: a mount of /etc/ssl must not
	// show (nor let a root command rewrite) /etc/ssl/private.
	for _, path := range p.ReadWrite {
		rules = append(rules, rulesBut(path, p.Hidden, all|exec, p.NoFollow)...)
	}
	for _, path := range p.Devices {
		rules = append(rules, pathRule{path, deviceRights & handled, p.NoFollow})
	}
	// DenyWrite needs no rule: it is not writable unless a ReadWrite rule
	// covers it, and checkPolicy refuses that.
	return attr, size, rules
}

// createRuleset creates a Landlock ruleset fd for attr with rules. It changes
// nothing about the calling thread; landlockRestrict does. ids, if not nil,
// gets what each rule's path was when its rule was added (see FileID).
func createRuleset(attr *unix.LandlockRulesetAttr, size uintptr, rules []pathRule, ids []FileID) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), size, 0)
	if e != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	if err := addPathRules(int(fd), rules, ids); err != nil {
		unix.Close(int(fd))
		return -1, err
	}
	return int(fd), nil
}

// addPathRules adds rules to ruleset; ids, if not nil, gets their paths' fileIDs.
func addPathRules(ruleset int, rules []pathRule, ids []FileID) error {
	for i, r := range rules {
		id, err := addPathRule(ruleset, r)
		if err != nil {
			return err
		}
		if ids != nil {
			ids[i] = id
		}
	}
	return nil
}

// FileID is what a path named when a rule was made for it: a Landlock rule holds
// the file, not the path, so a rule kept for later is only good while the path
// still names the same file (see Prepared).
type FileID struct {
	dev, ino uint64
	mode     uint32 // file type bits
	missing  bool   // the path named nothing: no rule was added
}

// currentID is what path names now; ok is false if that cannot be told.
func currentID(path string) (id FileID, ok bool) {
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return FileID{missing: true}, true
	}
	if err != nil {
		return FileID{}, false
	}
	return IDOf(&st), true
}

func IDOf(st *unix.Stat_t) FileID {
	return FileID{dev: st.Dev, ino: st.Ino, mode: st.Mode & unix.S_IFMT}
}

func addPathRule(ruleset int, r pathRule) (FileID, error) {
	fd, err := openForRule(r)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return FileID{missing: true}, nil // e.g. /lib64 on arm64: nothing there to allow
	}
	if err != nil {
		return FileID{}, fmt.Errorf("opening %s for a Landlock rule: %w", r.path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return FileID{}, fmt.Errorf("stat %s: %w", r.path, err)
	}
	id := IDOf(&st)
	access := r.access
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return id, nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return FileID{}, fmt.Errorf("landlock_add_rule %s (access %#x): %w", r.path, access, e)
	}
	return id, nil
}

// openForRule opens r's path for its rule: without following any symbolic link
// if r.noFollow, so that a link swapped in since the path was checked allows
// nothing (a rule holds the file the open reached, wherever that is).
func openForRule(r pathRule) (int, error) {
	if !r.noFollow {
		return unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, r.path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%w: %s goes through a symbolic link now, which it did not when it was checked", ErrPolicy, r.path)
	}
	return fd, err
}

// landlockRestrict enforces the ruleset on the calling thread, for good.
func landlockRestrict(ruleset int) error {
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}
