package launcher

import (
	"errors"
	"os"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// prepared is what a pooled launcher builds while it waits for its spec, for a
// base policy that specs usually extend (the paths every command may read): the
// network namespace, the private root begun for the base, and the thread's
// restriction prepared (confine.Prepared: the base's Landlock ruleset, an empty
// capability bounding set). Either way the command gets exactly its spec's
// sandbox.
type prepared struct {
	// root is the private root begun for base (see privateRoot), nil if none;
	// rootErr says why not where there could be one. Unless it wraps
	// errRootSetup the thread is half-built and every spec must fail.
	root        *privateRoot
	rootErr     error
	net         *privateNet     // the network namespace begun, nil if none
	base        *policy.Sandbox // what root was begun for
	restriction *confine.Prepared
}

// prepare does for base what can be done before the spec arrives, on the calling
// thread (the one that will restrict itself). What fails is left to the call,
// which then does it, or fails, as it would have without preparation.
func (t *cmdThread) prepare(base *policy.Sandbox) *prepared {
	pr := &prepared{base: base}
	if inUserNS {
		t.warmThreads()
		confine.NprocPerUserNS() // known before the call (applyNproc)
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
		pr.root, pr.rootErr = enterPrivateRoot(true)
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
	// After the root is begun: the rules are opened in the root the command
	// gets. A call without network gets a namespace with loopback alone (see
	// isolateNet), prepared or not.
	plan := base
	if pr.root == nil {
		// No view of its own cgroups: the host's paths of them
		// (cgroupview_linux.go), as the call's rules will have.
		own := *base
		ownCgroupRules(&own)
		plan = &own
	}
	pr.restriction = confine.Prepare(plan, wantPrivateRoot() && !base.AllowNetwork)
	return pr
}

// restricting returns the thread's restriction prepared, or nil; pr may be nil.
func (pr *prepared) restricting() *confine.Prepared {
	if pr == nil {
		return nil
	}
	return pr.restriction
}

// close releases a ruleset that was not used; pr may be nil.
func (pr *prepared) close() { pr.restricting().Close() }

// network returns the private network prepared, or nil; pr may be nil.
func (pr *prepared) network() *privateNet {
	if pr == nil {
		return nil
	}
	return pr.net
}
