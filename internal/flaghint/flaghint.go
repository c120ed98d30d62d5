// Package flaghint names, in messages, the flags of `autobox serve`. The tools'
// messages reach the MCP server and the command line (js, exec, ws, batch,
// session, task run) alike, and a flag only serve takes, named bare, tells a
// user of `autobox exec` to pass a flag exec does not have. So a message names
// such a flag with its command ("autobox serve --unsafe-no-sandbox"), and every
// flag named so is listed here, where a test checks that serve takes it.
package flaghint

// The serve flags that messages name.
const (
	UnsafeNoSandbox = "unsafe-no-sandbox"
	AllowHost       = "allow-host"
	LiftNeverMount  = "lift-never-mount"
	MaxQuestions    = "max-questions"
)

// All lists every flag above (checked against serve's flags by a test in
// cmd/autobox).
var All = []string{UnsafeNoSandbox, AllowHost, LiftNeverMount, MaxQuestions}

// Serve is how a message names serve's flag name: "autobox serve --NAME".
func Serve(name string) string { return "autobox serve --" + name }
