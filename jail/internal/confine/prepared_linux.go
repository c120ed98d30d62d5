package confine

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// Prepared is the part of a thread's restriction that a pooled launcher builds
// while it waits for its spec, for a base policy that specs usually extend (the
// paths every command may read): a Landlock ruleset that already holds the
// base's rules, and an empty capability bounding set. The call then adds only
// its own rules: opening and adding the base's ~30 paths took ~0.3 ms of every
// call.
//
// The prepared ruleset is used only when the spec extends the base (the same
// network and exec rights, and every one of the base's rules), and only if each
// of the base's paths still names the file it named when its rule was made: a
// rule holds a file, not a path, and a launcher may wait long. Otherwise the spec
// gets a ruleset built for it alone, as without preparation. Either way the
// command gets exactly its spec's rules. A nil *Prepared is nothing prepared.
type Prepared struct {
	// RootFresh: the command got the private root prepared for the base, not
	// rebuilt (the host changed nothing under it) nor abandoned, so each base
	// path is the bind made with its rule's file. Set by the launcher.
	RootFresh bool
	attr      unix.LandlockRulesetAttr
	size      uintptr
	rules     map[pathRule]FileID // the base's rules, all in fd, and their files
	fd        int                 // the ruleset, -1 if none (or taken)
	bounded   bool                // dropBounding ran on this thread
	used      bool                // ruleset handed out the prepared ruleset
}

// Prepare does for base what can be done of the restriction before the spec
// arrives, on the calling thread (the one that will restrict itself), after
// the root the command gets is begun: its rules are opened in it. loopback is
// as for Restrict. What fails is left to the call, which then does it, or
// fails, as it would have without preparation.
func Prepare(base *policy.Sandbox, loopback bool) *Prepared {
	pr := &Prepared{fd: -1}
	st := Probe()
	if st.Check(base) == nil {
		attr, size, rules := landlockPlan(base, st.LandlockABI, loopback)
		ids := make([]FileID, len(rules))
		if fd, err := createRuleset(&attr, size, rules, ids); err == nil {
			pr.attr, pr.size, pr.fd = attr, size, fd
			pr.rules = make(map[pathRule]FileID, len(rules))
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
func (pr *Prepared) ruleset(p *policy.Sandbox, abi int, loopback bool, placed []string) (int, error) {
	attr, size, rules := landlockPlan(p, abi, loopback)
	// In a private root prepared for the base and not rebuilt since, each base
	// path is the bind made with its rule's file: nothing to check again.
	if pr == nil || pr.fd < 0 || attr != pr.attr || size != pr.size || !pr.within(rules) || !pr.RootFresh && !pr.unchanged() {
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
func (pr *Prepared) within(rules []pathRule) bool {
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
func (pr *Prepared) unchanged() bool {
	for r, then := range pr.rules {
		if now, ok := currentID(r.path); !ok || now != then {
			return false
		}
	}
	return true
}

// Close releases a ruleset that was not used; pr may be nil.
func (pr *Prepared) Close() {
	if pr != nil && pr.fd >= 0 {
		unix.Close(pr.fd)
		pr.fd = -1
	}
}

// Used reports whether the prepared ruleset was used; pr may be nil.
func (pr *Prepared) Used() bool { return pr != nil && pr.used }

// isBounded reports whether dropBounding already ran; pr may be nil.
func (pr *Prepared) isBounded() bool { return pr != nil && pr.bounded }
