package launcher

import (
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
)

// System V objects (shared memory segments, semaphore arrays, message queues)
// hold memory of the call's IPC namespace, not of any process: a segment
// filled and detached, a semaphore array, a queued message are in no
// process's resident memory. A memory cgroup charges them to the call, so the
// kernel holds them to memoryMb where there is one (root); without one (an
// ordinary user's server) the RSS watchdog did not see them, and a command
// under memoryMb 64 held 256 MB in each kind while the namespace's default
// limits (shmall, semmns, msgmni x msgmnb) allow tens of gigabytes. The
// sysctls that would bound them in the namespace are writable only by the
// root of its user namespace, which an ordinary user's does not map.
//
// So the launcher, the init of the call's pid namespace and a member of its
// IPC namespace, asks the kernel every ipcPoll what the namespace holds
// (shmctl SHM_INFO, semctl SEM_INFO, msgctl MSG_INFO: one system call each, no
// walk of the objects) and reports it on its status pipe when it changes;
// the supervisor's watchdog adds it to the tree's memory where no memory
// cgroup counts it (Tree.IPC). A segment a process maps is counted again in
// that process's shared memory, as a segment two processes map is counted
// twice: the watchdog errs towards the limit.

// ipcPoll is how often the launcher asks: the watchdog's own interval.
const ipcPoll = 10 * time.Millisecond

// Commands of shmctl, semctl and msgctl that report on the whole namespace.
const (
	shmInfo = 14 // SHM_INFO
	semInfo = 19 // SEM_INFO
	msgInfo = 12 // MSG_INFO
)

// Sizes the kernel allocates for what the counts below count, at least: a
// semaphore (struct sem, cache-line aligned) and a message's header (struct
// msg_msg, in a kmalloc bucket) or an object's own (struct sem_array,
// msg_queue with its kern_ipc_perm).
const (
	semBytes    = 64
	msgHdrBytes = 64
	objectBytes = 256
)

// shmInfoT is struct shm_info; seminfoT struct seminfo; msginfoT struct msginfo.
type shmInfoT struct {
	UsedIDs                                    int32
	_                                          int32
	Tot, RSS, Swp, SwapAttempts, SwapSuccesses uint64
}

type seminfoT struct {
	Map, Mni, Mns, Mnu, Msl, Opm, Ume, Usz, Vmx, Aem int32
}

type msginfoT struct {
	Pool, Map, Max, Mnb, Mni, Ssz, Tql int32
	Seg                                uint16
}

// ipcBytes is the memory the System V objects of the caller's IPC namespace
// hold. Raw system calls: the launcher may have no thread to spare for a
// blocking one (RLIMIT_NPROC, see applyNproc).
func ipcBytes() int64 {
	var total int64
	var shm shmInfoT
	if _, _, e := unix.RawSyscall(unix.SYS_SHMCTL, 0, shmInfo, uintptr(unsafe.Pointer(&shm))); e == 0 {
		total += int64(shm.RSS+shm.Swp) * int64(os.Getpagesize())
	}
	var sem seminfoT
	if _, _, e := unix.RawSyscall6(unix.SYS_SEMCTL, 0, 0, semInfo, uintptr(unsafe.Pointer(&sem)), 0, 0); e == 0 {
		total += int64(sem.Aem)*semBytes + int64(sem.Usz)*objectBytes
	}
	var msg msginfoT
	if _, _, e := unix.RawSyscall(unix.SYS_MSGCTL, 0, msgInfo, uintptr(unsafe.Pointer(&msg))); e == 0 {
		total += int64(msg.Tql) + int64(msg.Map)*msgHdrBytes + int64(msg.Pool)*objectBytes
	}
	return total + tmpfsBytes() // the call's /dev/shm and /run (rootdev_linux.go)
}

// watchIPC reports ipcBytes on status while the command runs, in an IPC
// namespace of the launcher's own (it is then the init of a pid namespace:
// the two are made together); elsewhere System V objects are the host's, and
// nothing is reported. stop ends it, before the launcher's last frame.
func watchIPC(status *os.File) (stop func()) {
	if os.Getpid() != 1 {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(ipcPoll)
		defer tick.Stop()
		var last int64
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if n := ipcBytes(); n != last {
				last = n
				_ = wire.WriteFrame(status, &wire.Message{Type: wire.MsgIPC, IPC: n})
			}
		}
	}()
	return func() { close(quit); <-exited }
}
