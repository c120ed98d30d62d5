package policy

// Command is one command to run in an OS sandbox (jail on Linux, seatbelt on macOS).
type Command struct {
	// Argv is the command line. A first word without "/" is looked up in the PATH
	// of Env (absolute entries only; /usr/bin:/bin when Env has none) before the
	// sandbox applies; a relative path with a slash is relative to Dir.
	Argv []string
	// Dir is the working directory; "" keeps the caller's.
	Dir string
	// Env is the command's entire environment; nil means empty, never the caller's.
	Env []string
	// Sandbox is what the command may touch.
	Sandbox Sandbox
	// Unsafe runs the command without the OS sandbox: only for a server started
	// with the explicit unsafe flag. Process-tree handling stays.
	Unsafe bool
	// ProxySocket and ProxyToken are where a Linux launcher forwards the
	// connections its command makes to 127.0.0.1:Sandbox.ProxyPort inside its
	// network namespace (Sandbox.PrivateNetwork), and the token it names the
	// call by there (see package proxy). The command never sees the token.
	ProxySocket string
	ProxyToken  string
	// PortsSocket and PortsToken are where a Linux launcher serves the
	// command's session ports (package portfwd): it connects there, names
	// the call by the token, hands over the listeners of ListenPorts, and,
	// with OfferPorts, connects on request to a port of the command's own
	// loopback. The command never sees the token.
	PortsSocket string
	PortsToken  string
	// ListenPorts are ports the launcher listens on, on 127.0.0.1 and ::1 of
	// the command's private network, before the command starts: the ports of
	// sessions that this call's allowHosts names (session:ID:PORT), relayed
	// by the supervisor. Refused where the command shares the host's network.
	ListenPorts []int
	// OfferPorts (a session in a private network) lets the supervisor reach
	// the command's own loopback ports through the launcher.
	OfferPorts bool
	// Limits are the tree's resource limits (nil: none); see Limits.
	Limits *Limits
}

// Exit is how a sandboxed command ended.
type Exit struct {
	// Started is false when the command could not be started; SpawnError says why.
	Started    bool
	SpawnError string
	// ExitCode is the exit status, -1 when a signal ended the command or it never
	// started.
	ExitCode int
	// Signal is the name of the signal that ended it ("SIGKILL"), or "".
	Signal string
	// Lookups are the names the command tried to resolve itself inside a
	// private network, where no DNS is offered (at most 32).
	Lookups []string
	// UnixRefused are the unix sockets (paths, or @abstract names) the command
	// tried to connect to that are not its own, refused (at most 8).
	UnixRefused []string
	// Usage is what the enforcer measured of the tree once it was gone (the
	// kernel's accounting of every process it reaped); zero when it could not.
	Usage Usage
}

// ProxyPreamble starts every connection to the proxy's socket, followed by the
// call's token and a newline (see Command.ProxyToken).
const ProxyPreamble = "AUTOBOX-PROXY "

// ProxyTransparent is the message on a launcher's connection to the proxy
// that carries the listeners and DNS sockets of the command's transparent
// path (redirected connections and lookups), for the proxy to serve; the
// proxy answers with the same message once it serves them.
const ProxyTransparent = "T"
