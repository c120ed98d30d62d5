//go:build !autobox_bench_nolimits

package supervisor

// noLimits, in a binary built with the tag autobox_bench_nolimits (nolimits_bench.go),
// runs commands with their memory limit alone: `make bench` builds one to measure
// what the other limits cost. No switch of the shipped binary turns them off.
const noLimits = false
