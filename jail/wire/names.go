package wire

// NoNamespacesEnv, set to 1 in the environment of the process that starts
// launchers (and so in theirs), makes the jail use no namespaces even where it
// could: no pid namespace, no private root, no read-only remount. The sandbox
// is then what an unprivileged user gets (Landlock, seccomp, the process-tree
// sweep); the tests use it to check those paths on a root machine.
const NoNamespacesEnv = "AUTOBOX_NO_NAMESPACES"

// ProxyPort is where, inside its private network, a command reaches the proxy
// for its host allowlist (policy.Sandbox.PrivateNetwork): 127.0.0.1 and [::1].
// The launcher listens on it; the server reserves it.
const ProxyPort = 3128

// TmpDirName is the directory of the scratch dir (Sandbox.Tmp) that a private
// root shows at /tmp.
const TmpDirName = ".tmp"
