package jail

import (
	"os"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// Spec is one command to run in a sandbox through the launcher.
type Spec = policy.Command

// Result is how a command ended.
type Result = policy.Exit

// NoNamespacesEnv, set to 1 in the environment of the process that starts
// launchers, makes the jail use no namespaces even where it could (see
// wire.NoNamespacesEnv).
const NoNamespacesEnv = wire.NoNamespacesEnv

// PortsPreamble starts a launcher's connection to the server's ports socket
// (see wire.PortsPreamble).
const PortsPreamble = wire.PortsPreamble

// ProxyPort is where, inside its private network, a command reaches the proxy
// for its host allowlist (policy.Sandbox.PrivateNetwork): 127.0.0.1 and [::1].
const ProxyPort = wire.ProxyPort

// RedirectPort is where, inside its private network, a command's TCP
// connections to addresses outside it arrive, for the transparent path (see
// wire.RedirectPort).
const RedirectPort = wire.RedirectPort

// Interactive is what a command that outlives its first answer (a session)
// gets besides what Start gives: an input, and perhaps a terminal.
type Interactive struct {
	// Stdin is the command's standard input: a pipe's read end, or a
	// terminal. Required.
	Stdin *os.File
	// Terminal says that Stdin is a pseudo-terminal's slave, given as stdout
	// and stderr too: the command gets a session of its own with it as its
	// controlling terminal.
	Terminal bool
}
