//go:build !linux

package supervisor

import "github.com/shirou/gopsutil/v4/process"

// descendantsOf returns pid and every process below it.
func descendantsOf(pid int32) []int32 {
	out := []int32{pid}
	for i := 0; i < len(out) && len(out) < 65536; i++ {
		kids, err := (&process.Process{Pid: out[i]}).Children()
		if err != nil {
			continue
		}
		for _, k := range kids {
			out = append(out, k.Pid)
		}
	}
	return out
}
