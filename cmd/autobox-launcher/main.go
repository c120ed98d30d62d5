// Command autobox-launcher is the small launcher: the child roles of package
// jail (`worker exec` and its probes) and nothing else, in pure Go. `make
// build` appends it to bin/autobox, which starts its launchers from it (see
// internal/launcherbin); it is not meant to be run by hand.
//
// Its launcher code is the main binary's (jail/launcher.Main, the same
// table): none of the code these roles run differs between a cgo build (the
// main binary, for V8) and this one. The files that do (cloneprobe,
// usernsfork, sigsys) serve the server side and the JS worker, which stay in
// the main binary; TestSmallLauncherHasNoCgoPaths checks they are not linked
// in here.
package main

import (
	"os"

	"github.com/autobox-dev/autobox/jail/launcher"
)

func init() {
	// As in the main binary: the main goroutine owns the main thread from the
	// start (launcher.Main refuses to run a role without).
	launcher.LockMainThread(os.Args)
	nameAfterArgv0(os.Args)
}

func main() { launcher.Main(os.Args) }
