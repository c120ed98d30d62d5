package jail

import "github.com/autobox-dev/autobox/policy"

// Spec is one command to run in a sandbox through the launcher.
type Spec = policy.Command

// Result is how a command ended.
type Result = policy.Exit

// NoNamespacesEnv, set to 1 in the environment of the process that starts
// launchers, makes the jail use no namespaces even where it could: no pid
// namespace, no private root, no read-only remount. The sandbox is then what
// an unprivileged user gets (Landlock, seccomp, the process-tree sweep); the
// tests use it to check those paths on a root machine.
const NoNamespacesEnv = "AUTOBOX_NO_NAMESPACES"

// ProxyPort is where, inside its private network, a command reaches the proxy
// for its host allowlist (policy.Sandbox.PrivateNetwork): 127.0.0.1 and [::1].
const ProxyPort = 3128
