package policy

// Limits of execute_js and exec_command, as the behaviour reference sets them,
// but exec_command's time limit, which fits build and test work (issue 30): the
// reference's 1.5 s default killed an ordinary `npm test` under load.
const (
	JSDefaultTimeoutMs = 800
	JSMaxTimeoutMs     = 10000
	JSDefaultMemoryMb  = 32
	JSMinMemoryMb      = 8
	JSMaxMemoryMb      = 512

	ExecDefaultTimeoutMs = 30000
	ExecMaxTimeoutMs     = 600000 // 10 minutes; longer with yieldMs, as a session
	ExecDefaultMemoryMb  = 256
	ExecMinMemoryMb      = 16
	ExecMaxMemoryMb      = 2048

	DefaultMaxBridgeBytes = 1000000
	MaxBridgeBytes        = 50000000

	ExecMaxStdout = 256 * 1024
	ExecMaxStderr = 64 * 1024
)
