package jail

import (
	"errors"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// prepared is the part of a command's sandbox that a pooled launcher builds while
// it waits for its spec, for a base policy that specs usually extend (the paths
// every command may read): a Landlock ruleset that already holds the base's
// rules, and an empty capability bounding set. The call then adds only its own
// rules: opening and adding the base's ~30 paths took ~0.3 ms of every call.
//
// The prepared ruleset is used only when the spec extends the base (the same
// network and exec rights, and every one of the base's rules), and only if each
// of the base's paths still names the file it named when its rule was made: a
// rule holds a file, not a path, and a launcher may wait long. Otherwise the spec
// gets a ruleset built for it alone, as without preparation. Either way the
// command gets exactly its spec's rules.
type prepared struct {
	// root is the private root begun for base (see privateRoot), nil if none;
	// rootErr says why not where there could be one. Unless it wraps
	// errRootSetup the thread is half-built and every spec must fail.
	root    *privateRoot
	rootErr error
	net     *privateNet     // the network namespace begun, nil if none
	base    *policy.Sandbox // what root was begun for
	// rootFresh: the command got the root prepared for base, not rebuilt (the
	// host changed nothing under it) nor abandoned. Set by isolate.
	rootFresh bool
	attr      unix.LandlockRulesetAttr
	size      uintptr
	rules     map[pathRule]fileID // the base's rules, all in fd, and their files
	fd        int                 // the ruleset, -1 if none (or taken)
	bounded   bool                // dropBounding ran on this thread
	used      bool                // ruleset handed out the prepared ruleset
}

// prepare does for base what can be done before the spec arrives, on the calling
// thread (the one that will restrict itself). What fails is left to the call,
// which then does it, or fails, as it would have without preparation.
func (t *cmdThread) prepare(base *policy.Sandbox) *prepared {
	pr := &prepared{fd: -1, base: base}
	if inUserNS {
		t.warmThreads()
		nprocPerUserNS() // known before the call (applyNproc)
	} else if wantHostNproc(t.pidsMax) && os.Getuid() != 0 {
		t.warmThreads() // before the call's limit (applyHostNproc)
	}
	if wantPrivateRoot() {
		// In a user namespace the launcher cannot go back to the host's
		// network for a call with the whole network (setns needs
		// CAP_SYS_ADMIN over the host's namespace): such calls get a launcher
		// that was not prepared (see wholeNetworkInUserNS).
		// First, while /proc is the host's: it names the host's namespace.
		// A listener that could not be opened leaves a namespace that is good
		// for commands without network only (isolateNet checks).
		pr.net, _ = enterPrivateNet()
	}
	if wantPrivateRoot() {
		// Before the ruleset: its rules are opened in the root the command gets.
		pr.root, pr.rootErr = enterPrivateRoot()
		if pr.root != nil {
			if err := pr.root.addPolicy(base); err != nil {
				pr.root, pr.rootErr = nil, pr.root.abandon(err)
				if !errors.Is(pr.rootErr, errRootSetup) {
					return pr // the thread is not usable: every spec fails
				}
			} else {
				pr.root.makeGuardProc()
			}
		}
	}
	st := Probe()
	if st.Check(base) == nil {
		// A call without network gets a namespace with loopback alone (see
		// isolateNet), prepared or not.
		plan := base
		if pr.root == nil {
			// No view of its own cgroups: the host's paths of them
			// (cgroupview_linux.go), as the call's rules will have.
			own := *base
			ownCgroupRules(&own)
			plan = &own
		}
		attr, size, rules := landlockPlan(plan, st.LandlockABI, wantPrivateRoot() && !base.AllowNetwork)
		ids := make([]fileID, len(rules))
		if fd, err := createRuleset(&attr, size, rules, ids); err == nil {
			pr.attr, pr.size, pr.fd = attr, size, fd
			pr.rules = make(map[pathRule]fileID, len(rules))
			for i, r := range rules {
				pr.rules[r] = ids[i]
			}
		}
	}
	if held, err := holdsCapabilities(); err == nil && held {
		pr.bounded = dropBounding() == nil
	}
	return pr
}

// ruleset returns a Landlock ruleset fd with p's rules, for the caller to close:
// the prepared one plus p's other rules when p extends the base and the base's
// paths are unchanged, else a new one. pr may be nil. placed are paths of p
// whose files the call put over the base's (rootfiles_linux.go): their rules
// are added again, for the new files.
func (pr *prepared) ruleset(p *policy.Sandbox, abi int, loopback bool, placed []string) (int, error) {
	attr, size, rules := landlockPlan(p, abi, loopback)
	// In a private root prepared for the base and not rebuilt since, each base
	// path is the bind made with its rule's file: nothing to check again.
	if pr == nil || pr.fd < 0 || attr != pr.attr || size != pr.size || !pr.within(rules) || !pr.rootFresh && !pr.unchanged() {
		return createRuleset(&attr, size, rules, nil)
	}
	fd := pr.fd
	pr.fd, pr.used = -1, true
	extra := make([]pathRule, 0, len(rules))
	for _, r := range rules {
		if _, ok := pr.rules[r]; !ok || slices.Contains(placed, r.path) {
			extra = append(extra, r)
		}
	}
	if err := addPathRules(fd, extra, nil); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// within reports whether every prepared rule is among rules.
func (pr *prepared) within(rules []pathRule) bool {
	found := make(map[pathRule]bool, len(pr.rules))
	for _, r := range rules {
		if _, ok := pr.rules[r]; ok {
			found[r] = true
		}
	}
	return len(found) == len(pr.rules)
}

// unchanged reports whether each prepared rule's path still names the file (or
// the absence of one) that it named when the rule was made.
func (pr *prepared) unchanged() bool {
	for r, then := range pr.rules {
		if now, ok := currentID(r.path); !ok || now != then {
			return false
		}
	}
	return true
}

// close releases a ruleset that was not used; pr may be nil.
func (pr *prepared) close() {
	if pr != nil && pr.fd >= 0 {
		unix.Close(pr.fd)
		pr.fd = -1
	}
}

// network returns the private network prepared, or nil; pr may be nil.
func (pr *prepared) network() *privateNet {
	if pr == nil {
		return nil
	}
	return pr.net
}

// usedRuleset reports whether the prepared ruleset was used; pr may be nil.
func (pr *prepared) usedRuleset() bool { return pr != nil && pr.used }

// isBounded reports whether dropBounding already ran; pr may be nil.
func (pr *prepared) isBounded() bool { return pr != nil && pr.bounded }
