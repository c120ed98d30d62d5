//go:build !linux

package watchdog

import (
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// Elsewhere (macOS) a tree is walked and read through gopsutil: the resident
// memory, threads and CPU time of each live process. What processes that are
// gone used, and bytes written, are not measured here: writes are held by
// RLIMIT_FSIZE per file only.
func measure(root int, m how) sample {
	excludeRoot := m.excludeRoot
	var s sample
	pids := []int32{int32(root)}
	for i := 0; i < len(pids) && len(pids) < 65536; i++ {
		p := &process.Process{Pid: pids[i]}
		if kids, err := p.Children(); err == nil {
			for _, k := range kids {
				pids = append(pids, k.Pid)
			}
		}
		if excludeRoot && i == 0 {
			continue
		}
		if mi, err := p.MemoryInfo(); err == nil {
			s.rss += int64(mi.RSS)
		}
		if n, err := p.NumThreads(); err == nil {
			s.tasks += int(n)
		}
		if t, err := p.Times(); err == nil {
			s.cpu += time.Duration((t.User + t.System) * float64(time.Second))
		}
	}
	return s
}
