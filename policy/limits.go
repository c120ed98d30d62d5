package policy

// Limits of execute_js and exec_command, as the behaviour reference sets them.
const (
	JSDefaultTimeoutMs = 800
	JSMaxTimeoutMs     = 10000
	JSDefaultMemoryMb  = 32
	JSMinMemoryMb      = 8
	JSMaxMemoryMb      = 512

	ExecDefaultTimeoutMs = 1500
	ExecMaxTimeoutMs     = 30000
	ExecDefaultMemoryMb  = 256
	ExecMinMemoryMb      = 16
	ExecMaxMemoryMb      = 2048

	DefaultMaxBridgeBytes = 1000000
	MaxBridgeBytes        = 50000000

	ExecMaxStdout = 256 * 1024
	ExecMaxStderr = 64 * 1024
)
