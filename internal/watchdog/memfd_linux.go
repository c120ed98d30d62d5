package watchdog

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Memory held in memfds (memfd_create) is shared memory that no page table maps
// until the process maps it: a memfd written with write(2) and never mapped is
// not in any process's RssShmem, so without a memory cgroup (which charges
// every page to the tree) the watchdog's sum of resident memory did not see it
// (1.5 GB held under memoryMb 64). Where Options.Memfds asks for it, each poll
// also looks at every descriptor of every process of the tree: a link whose
// target starts "/memfd:" is a memfd, and the blocks it holds count, for that
// process, as its shared memory when they are more than its RssShmem (a process
// that maps its own memfd is not counted twice). readlink of the descriptor
// touches no filesystem, so a descriptor on a hung mount costs nothing; only
// memfds are stat'ed.
//
// What this does not see: a memfd mapped and then closed, with pages that are
// not resident (not in RssShmem either), and a memfd that is in flight in a
// unix socket (sent with SCM_RIGHTS, closed by its sender). Each memfd is
// bounded by RLIMIT_FSIZE (maxWriteMb); see SECURITY.md.

// memfdBytes is the memory held by the memfds pid has open, each once.
func memfdBytes(pid int, buf []byte) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var total int64
	var seen map[uint64]bool
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return total
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			var link [64]byte
			k, err := unix.Readlinkat(fd, name, link[:])
			if err != nil || !strings.HasPrefix(string(link[:k]), "/memfd:") {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, 0) != nil {
				continue
			}
			if seen == nil {
				seen = map[uint64]bool{}
			}
			if !seen[st.Ino] {
				seen[st.Ino] = true
				total += st.Blocks * 512
			}
		}
	}
}
