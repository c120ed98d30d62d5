//go:build cgo

package worker

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	v8 "rogchap.com/v8go"

	"github.com/autobox-dev/autobox/worker/proto"
)

//go:embed prelude.js
var preludeJS string

// Stage flags: the first word after "worker js".
const (
	// JailedFlag marks stage 2 of the worker (after the jail and re-exec).
	JailedFlag = "--jailed"
	// UnjailedFlag asks the worker to skip the jail: the supervisor passes it only on
	// a host that cannot jail workers, and says so at start-up.
	UnjailedFlag = "--unjailed"
)

// Main is the body of `autobox worker js`; it never returns. args are the words
// after "worker js".
func Main(args []string) {
	watchLife()
	stage := ""
	if len(args) > 0 {
		stage = args[0]
	}
	if err := enterJail(stage); err != nil {
		fmt.Fprintf(os.Stderr, "autobox worker js: jail: %v\n", err)
		os.Exit(71)
	}
	// V8 must not run on the main thread: glibc finds the main thread's stack by
	// parsing /proc/self/maps, which V8 asks for on every entry (about 100µs each, and
	// unreadable once jailed). Other threads know their stack without it.
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		done <- serve()
	}()
	os.Exit(<-done)
}

// lifeFD is the read end of the supervisor's life pipe, whose write end only the
// supervisor holds: its end of file means the supervisor is gone.
const lifeFD = 5

// watchLife ends the worker when the supervisor is gone, whatever the worker is
// doing (a JS loop runs on another thread): the worker has no parent-death signal.
func watchLife() {
	var st syscall.Stat_t
	if syscall.Fstat(lifeFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return // started by hand, without the pipe
	}
	life := os.NewFile(lifeFD, "life")
	go func() {
		var b [1]byte
		_, _ = life.Read(b[:])
		os.Exit(0)
	}()
}

// serve warms V8, answers one call and returns the exit code.
func serve() int {
	in := os.NewFile(3, "from-supervisor")
	out := os.NewFile(4, "to-supervisor")
	if in == nil || out == nil {
		fmt.Fprintln(os.Stderr, "autobox worker js: fds 3 and 4 must be the supervisor's pipes")
		return 72
	}
	init, err := proto.Read(in)
	if err != nil || init.Type != proto.TypeInit || init.Init == nil {
		return 0 // the supervisor went away
	}
	w, err := newWarm(in, out, init.Init)
	if err != nil {
		fmt.Fprintf(os.Stderr, "autobox worker js: warming V8: %v\n", err)
		return 73
	}
	ready := &proto.Message{Type: proto.TypeReady, Ready: &proto.Ready{PreludeCache: w.newCache, V8: v8.Version()}}
	if err := proto.Write(out, ready); err != nil {
		return 74
	}
	msg, err := proto.Read(in)
	if err == nil && msg.Type == proto.TypeProbe {
		_ = proto.Write(out, &proto.Message{Type: proto.TypeResult, Result: probe(msg.Probe)})
		return 0
	}
	if err != nil || msg.Type != proto.TypeRun || msg.Run == nil {
		return 0 // the supervisor went away or retired this worker
	}
	capCPU(msg.Run.TimeoutMs)
	res := w.run(msg.Run)
	if err := proto.Write(out, &proto.Message{Type: proto.TypeResult, Result: res}); err != nil {
		return 75
	}
	return 0
}

// probe tries to open each path, from this thread and from a fresh one, and reports
// "<path>: opened" or "<path>: <error>" per attempt. A path "syscall:N" makes system
// call N with zero arguments instead ("ok" or the error).
func probe(paths []string) *proto.Result {
	res := &proto.Result{OK: true, Result: []byte("null")}
	try := func(p string) string {
		if n, ok := strings.CutPrefix(p, "syscall:"); ok {
			nr, err := strconv.Atoi(n)
			if err != nil {
				return err.Error()
			}
			if _, _, e := syscall.RawSyscall(uintptr(nr), 0, 0, 0); e != 0 {
				return e.Error()
			}
			return "ok"
		}
		f, err := os.Open(p)
		if err != nil {
			return err.Error()
		}
		f.Close()
		return "opened"
	}
	for _, p := range paths {
		res.Logs = append(res.Logs, p+": "+try(p))
		other := make(chan string)
		go func() {
			runtime.LockOSThread() // a thread of its own, exits with the goroutine
			other <- try(p)
		}()
		res.Logs = append(res.Logs, p+" (another thread): "+<-other)
	}
	return res
}

// heapFlags are the V8 flags for a heap of memoryMb, and for a call that does all
// its work on one thread: V8's platform starts a pool of worker threads sized by
// the machine's CPUs before autobox can size it (v8go makes the platform at package
// init), so --single-threaded keeps V8 from giving those threads any work
// (concurrent compilation, marking, parallel scavenges). A call then uses at most
// one CPU, whatever the machine, and its CPU time cap (cpucap.go) means time.
func heapFlags(memoryMb int) []string {
	semi := memoryMb / 32
	if semi < 1 {
		semi = 1
	}
	return []string{
		"--single-threaded",
		fmt.Sprintf("--max-old-space-size=%d", memoryMb),
		fmt.Sprintf("--max-semi-space-size=%d", semi),
	}
}
