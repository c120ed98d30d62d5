package supervisor

import (
	"fmt"
	"strings"
)

// What an execute_js error that ends at a limit of the tool says besides the
// error itself (issue 30): the time limit names timeoutMs and how far it goes,
// and a Node API that standard JavaScript lacks (require, process) says what
// the isolate has instead. The error's own text comes first, unchanged.

// jsNodeGlobals are Node's names that scripts reach for and the isolate lacks.
var jsNodeGlobals = []string{"require", "process", "Buffer", "module", "__dirname", "__filename"}

// jsNote is the note to append to an execute_js error msg, "" for none.
// ended is the limit the call ended at; timeoutCap is the most timeoutMs may
// be (the tool's bound, or the user's ceiling where lower).
func jsNote(msg string, ended JSLimit, timeoutCap int) string {
	if ended == JSTimeout {
		if timeoutCap < int(jsTimeoutMs.max) {
			return fmt.Sprintf(": timeoutMs is at most %d here (the user's ceiling); longer work runs in exec_command", timeoutCap)
		}
		return fmt.Sprintf(": raise timeoutMs (at most %d) for a longer script; longer work runs in exec_command (node, python3, …; its timeoutMs up to %d)", timeoutCap, execTimeoutMs.max)
	}
	for _, name := range jsNodeGlobals {
		if strings.Contains(msg, "ReferenceError: "+name+" is not defined") {
			return fmt.Sprintf(" (execute_js runs standard JavaScript in a bare V8 isolate: no %s or other Node API. Files of the call's mounts: host.readFile, host.writeFile, host.listDir; the network: fetch, with allowHosts. To run Node itself, call exec_command with [\"node\", …])", name)
		}
	}
	return ""
}

// jsTimeoutCap is the most an execute_js call's timeoutMs may be now.
func (s *Server) jsTimeoutCap() int {
	c := int(jsTimeoutMs.max)
	if max := s.Ceiling().Limit("timeoutMs", &s.grants); max > 0 && max < c {
		c = max
	}
	return c
}
