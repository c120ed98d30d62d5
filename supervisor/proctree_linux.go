package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// descendantsOf returns pid and every process below it, from the kernel's per-thread
// children lists: cheap enough to walk every few milliseconds, unlike a scan of all
// of /proc. Orphans of the tree are reparented to the launcher (a subreaper), so they
// stay in it.
func descendantsOf(pid int32) []int32 {
	out := []int32{pid}
	for i := 0; i < len(out) && len(out) < 65536; i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, w := range strings.Fields(string(b)) {
				if n, err := strconv.ParseInt(w, 10, 32); err == nil {
					out = append(out, int32(n))
				}
			}
		}
	}
	return out
}
