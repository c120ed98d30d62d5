package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// memCgroups puts each command tree in a memory cgroup of its own, below the server's
// own, with a hard limit: the kernel's backstop behind the RSS watchdog (which polls,
// and can be outrun by a fast allocator). It is used where the host lets this process
// create cgroups (root on cgroup v1, or a delegated cgroup v2 subtree); elsewhere the
// watchdog alone enforces memoryMb.
type memCgroups struct {
	base  string // directory new cgroups go in
	v2    bool
	limit string // file that takes the limit in bytes
}

// cgroupSlack is what the launcher itself may use beyond the command's memoryMb.
const cgroupSlack = 32 << 20

var probeCgroups = sync.OnceValue(func() *memCgroups {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var candidates []*memCgroups
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "" && parts[0] == "0":
			candidates = append(candidates, &memCgroups{base: filepath.Join("/sys/fs/cgroup", parts[2]), v2: true, limit: "memory.max"})
		case strings.Contains(","+parts[1]+",", ",memory,"):
			candidates = append(candidates, &memCgroups{base: filepath.Join("/sys/fs/cgroup/memory", parts[2]), limit: "memory.limit_in_bytes"})
		}
	}
	for _, c := range candidates {
		if c.v2 {
			b, err := os.ReadFile(filepath.Join(c.base, "cgroup.subtree_control"))
			if err != nil || !strings.Contains(string(b), "memory") {
				continue
			}
		}
		probe := filepath.Join(c.base, "autobox-probe-"+uuid.NewString())
		if os.Mkdir(probe, 0o755) != nil {
			continue
		}
		_, err := os.Stat(filepath.Join(probe, c.limit))
		os.Remove(probe)
		if err == nil {
			return c
		}
	}
	return nil
})

// create makes a cgroup limited to memoryMb (plus the launcher's slack) and returns
// the file a process writes its pid to, and a func that removes the cgroup once empty.
// ok is false when the host offers no cgroups to this process.
func (c *memCgroups) create(memoryMb int) (procs string, oomKills func() int, remove func(), ok bool) {
	if c == nil {
		return "", nil, nil, false
	}
	dir := filepath.Join(c.base, "autobox-"+uuid.NewString())
	if os.Mkdir(dir, 0o755) != nil {
		return "", nil, nil, false
	}
	limit := strconv.FormatInt(int64(memoryMb)<<20+cgroupSlack, 10)
	if err := os.WriteFile(filepath.Join(dir, c.limit), []byte(limit), 0); err != nil {
		os.Remove(dir)
		return "", nil, nil, false
	}
	events := "memory.oom_control"
	if c.v2 {
		events = "memory.events"
	}
	oomKills = func() int {
		b, _ := os.ReadFile(filepath.Join(dir, events))
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "oom_kill" {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
		return 0
	}
	// The launcher leaves the cgroup only when it has been reaped, a moment after the
	// call's answer: remove retries for a while (callers run it in the background).
	remove = func() {
		for i := 0; i < 100; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "autobox: could not remove cgroup %s\n", dir)
	}
	return filepath.Join(dir, "cgroup.procs"), oomKills, remove, true
}
