package cmdrun

import "github.com/autobox-dev/autobox/internal/watchdog"

// Why a command's tree was killed, as a value: a result's killedBy, which the
// CLI's exit statuses and the notes of a result branch on, and the text that
// starts its stderr. Rewording a text changes neither.

// KillKind is why a command's tree was killed.
type KillKind string

// The kinds of kill. Each limit kind is the watchdog's, the kernel's cgroup
// OOM kill (memory) or RLIMIT_CPU (cpu).
const (
	KilledTimeout   KillKind = "timeout"   // the wall-clock limit (timeoutMs) passed
	KilledCancelled KillKind = "cancelled" // the client cancelled the call, or closed
	KilledMemory    KillKind = "memory"    // the memory limit
	KilledProcesses KillKind = "processes" // the process limit
	KilledDisk      KillKind = "disk"      // the limit on bytes written
	KilledCPU       KillKind = "cpu"       // the CPU time limit
	KilledSession   KillKind = "session"   // a session closed, idle, or the server shutting down
)

// Reason is a kill's kind and its text ("" for the kinds whose text the
// caller makes: timeout, cancelled).
type Reason struct {
	Kind KillKind
	Text string
}

// breachKinds maps the watchdog's limits to the kinds of kill.
var breachKinds = map[watchdog.Kind]KillKind{
	watchdog.Memory:    KilledMemory,
	watchdog.Processes: KilledProcesses,
	watchdog.Disk:      KilledDisk,
	watchdog.CPU:       KilledCPU,
}
