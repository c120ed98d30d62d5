package supervisor

import (
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/policy"
)

// Notes for programs that meet one of the few walls a command has that the
// user's machine does not: a host's unix socket (never reachable), and a
// sandbox of the program's own (Chromium's, which needs user namespaces the
// command may not make). Each says what happened and what works instead.

// noteCompat appends to stderr the notes that apply to a finished command.
func noteCompat(out *ExecOutput, res policy.Exit) {
	if len(res.UnixRefused) > 0 {
		out.Stderr += fmt.Sprintf("[autobox: connecting to the unix socket %s was refused (Permission denied): it is not one of this command's own sockets. Sockets of the host (agents, daemons, docker.sock, autobox's own) are never reachable from inside, even in a mounted directory; a socket the command itself listens on works]\n", strings.Join(res.UnixRefused, ", "))
	}
	if ownSandboxFailed(out.Stdout + "\n" + out.Stderr) {
		out.Stderr += "[autobox: the program's own sandbox needs user namespaces, which a command inside autobox may not make; autobox's sandbox holds it already: start Chromium or Chrome with --no-sandbox (Playwright: chromiumSandbox: false; Puppeteer: args: ['--no-sandbox']; Electron: --no-sandbox)]\n"
	}
}

// ownSandboxFailed reports whether output holds what Chromium (and Chrome,
// Electron, Puppeteer, Playwright) says when its own sandbox cannot start.
func ownSandboxFailed(output string) bool {
	for _, w := range []string{
		"No usable sandbox!",
		"Failed to move to new namespace",
		"zygote_host_impl_linux.cc",
		"Running as root without --no-sandbox is not supported",
	} {
		if strings.Contains(output, w) {
			return true
		}
	}
	return false
}
