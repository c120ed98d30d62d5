//go:build autobox_bench_nolimits

package supervisor

// noLimits: this binary was built for `make bench` alone (the tag
// autobox_bench_nolimits) and runs commands with their memory limit alone, so
// that the benchmark can measure what maxProcesses, maxWriteMb and cpuMs
// cost; their pids and cpu cgroups are still made and joined by idle
// launchers, with no limit set. A server says so when it starts.
const noLimits = true
