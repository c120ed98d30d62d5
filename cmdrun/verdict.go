package cmdrun

// The timeout verdict follows the command, not the server's clock alone.
//
// A call's time limit is a timer in this process. If the process is paused (SIGSTOP,
// a suspended laptop, a starved VM) while the command runs, the timer and the
// command's end become due together when it resumes, and which the Go runtime runs
// first is chance: a command that exited 0 after 1 s of a 3 s limit was reported
// "killed: timeout". So when the timer fires, it first asks whether the command's
// tree has already ended on its own (its launcher has exited, which it does only
// once the tree is gone); then the kill would find nothing to kill, and the call is
// answered with how the command ended.

// timeUp is the time limit's action: kill r's tree for "timeout", unless it had
// already ended.
func (r *Run) timeUp() {
	if launcherExited(r.tree) {
		return
	}
	r.Kill(Reason{Kind: KilledTimeout})
}
