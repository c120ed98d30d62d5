package supervisor

import (
	"strings"

	"github.com/autobox-dev/autobox/proxy"
)

// Notes that tell a model why a command's network failed and what to ask
// for. A command's own errors ("Couldn't connect to server", "Address family
// not supported by protocol") do not say that the network is off by this
// call's choice; a plain-HTTP denial leaves curl at exit 0 with the denial
// page as its "download"; and a client that ignores the proxy variables fails
// with a lookup error of its own.

// offlineSigns are what common tools print when they reach for a network they
// do not have: curl, wget, git, pip and requests, npm and Node, Go, Python's
// socket, getaddrinfo.
var offlineSigns = []string{
	"Could not resolve host", "Couldn't connect to server", "Could not resolve proxy",
	"Temporary failure in name resolution", "Name or service not known", "No address associated with hostname",
	"Network is unreachable", "Address family not supported by protocol",
	"unable to resolve host address", "Failed to establish a new connection", "NewConnectionError",
	"getaddrinfo", "EAI_AGAIN", "ENOTFOUND", "ENETUNREACH", "network is unreachable",
	"no such host", "fetch failed", "Could not fetch URL", "unable to access 'http",
}

// offlineNote is appended to the stderr of a failed command of a call
// without network whose output looks like a network failure.
const offlineNote = "\n[autobox: this call has no network (neither allowNetwork nor allowHosts), which looks like why the command failed: pass allowHosts with the hosts it needs, e.g. [\"pypi.org\", \"files.pythonhosted.org\"] (through autobox's proxy, recorded in network), or allowNetwork for the whole network (ask the user first). The command's 127.0.0.1 is its own, not the host's: a server of the host is reached with allowHosts [\"localhost:PORT\"], a session's with [\"session:SESSION_ID:PORT\"]]\n"

// proxyIgnoredNote is appended when a command of a call with allowHosts
// failed to look a name up itself: it ignored the proxy variables.
const proxyIgnoredNote = "[autobox: the command looked names up itself instead of using the proxy variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY), so it could not connect. Node before 22.21 ignores them in fetch (NODE_USE_ENV_PROXY=1 is set for newer Node); use a client that honours them (curl, wget, pip, npm, git, Python requests, Go's net/http) or, for Node 20, its http/https modules through the proxy]\n"

// noteNetwork appends the notes above that apply to a finished command.
func (c *execCall) noteNetwork(out *ExecOutput, rec *proxy.Record) {
	failed := out.Killed || out.ExitCode == nil || *out.ExitCode != 0
	switch {
	case !c.net.open && !c.net.proxied():
		if failed && looksOffline(out.Stderr, out.Stdout) {
			out.Stderr += offlineNote
		}
	case rec != nil:
		// Every denial, whatever the exit status: curl -sS of a denied
		// plain-HTTP URL exits 0 with the proxy's 403 page as its output.
		out.Stderr += rec.DeniedBlock()
		if failed && lookedUpItself(rec) {
			out.Stderr += proxyIgnoredNote
		}
	}
}

func looksOffline(texts ...string) bool {
	for _, t := range texts {
		for _, s := range offlineSigns {
			if strings.Contains(t, s) {
				return true
			}
		}
	}
	return false
}

// lookedUpItself: a denial is a lookup of the command's own (port 53).
func lookedUpItself(rec *proxy.Record) bool {
	for _, d := range rec.Denied {
		if d.Port == 53 {
			return true
		}
	}
	return false
}
