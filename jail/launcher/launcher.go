package launcher

import (
	"fmt"
	"os"

	"github.com/autobox-dev/autobox/jail/restrict"
)

// Role is the body of a child role: it gets the arguments after its name and
// returns the process's exit code (or never returns).
type Role func(args []string) int

// roles starts with the launcher's own (childRoles: `worker exec` and the
// probes the server runs in a child).
var roles = childRoles()

// Register adds a role to the table. It is called from an init function,
// before Main; a name registered twice panics.
func Register(name string, r Role) {
	if _, dup := roles[name]; dup {
		panic("launcher: role " + name + " registered twice")
	}
	roles[name] = r
}

// IsChild reports whether args (os.Args) start a child role: the program is
// then to call LockMainThread from its init function and Main from main.
func IsChild(args []string) bool { return len(args) > 1 && args[1] == "worker" }

// LockMainThread keeps the main thread out of every restriction when args
// (os.Args) start a child role: the main goroutine takes it for good (see
// restrict.LockMainThread). It must be called from an init function.
func LockMainThread(args []string) {
	if IsChild(args) {
		restrict.LockMainThread()
	}
}

// Main runs the role args (os.Args) name and exits with its code. It never
// returns.
func Main(args []string) {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "autobox worker: which role? (autobox starts its workers itself)")
		os.Exit(2)
	}
	r, ok := roles[args[2]]
	if !ok {
		fmt.Fprintf(os.Stderr, "autobox worker: unknown role %q\n", args[2])
		os.Exit(2)
	}
	if !restrict.MainThreadLocked() {
		fmt.Fprintf(os.Stderr, "autobox worker %s: %v: launcher.LockMainThread was not called from an init function\n", args[2], restrict.ErrMainThread)
		os.Exit(2)
	}
	os.Exit(r(args[3:]))
}
