package jspool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/worker/proto"
)

// maxWorkerStderr bounds what the supervisor keeps of a worker's stderr: enough to
// recognise V8's fatal heap message.
const maxWorkerStderr = 16 << 10

// jsWorker is one prefork `autobox worker js` process, ready for exactly one call.
type jsWorker struct {
	proc   *os.Process
	state  *os.ProcessState // once exited is closed (nil if waiting failed)
	toW    *os.File         // frames to the worker
	fromW  *os.File         // frames from the worker: a blocking pipe, read by the worker's owner
	exited chan struct{}    // closed once the process has been reaped and its stderr read
	stderr *boundedBuffer

	gotCache bool // started with the prelude code cache
	spaced   bool // its call was spaced out from the one before (see done)
}

// read receives the worker's next frame. The pipe is in blocking mode, outside Go's
// poller, so the caller's thread sleeps in read(2) and the worker's frame wakes it
// directly, instead of waking the poller, which then wakes the caller: each thread
// wake-up costs 50-200µs on a small VM. Reading in the caller's goroutine, rather
// than handing frames over from another, saves one more. A read is ended by ending
// the worker: see watch.
func (w *jsWorker) read() (*proto.Message, error) {
	return proto.Read(w.fromW)
}

// watch kills the worker at deadline or when ctx ends, which ends a pending read
// with EOF; expired tells whether the deadline did it. stop disarms both.
func (w *jsWorker) watch(ctx context.Context, deadline time.Time) (expired func() bool, stop func()) {
	var hit atomic.Bool
	t := time.AfterFunc(time.Until(deadline), func() {
		hit.Store(true)
		_ = w.proc.Kill()
	})
	stopCtx := context.AfterFunc(ctx, func() { _ = w.proc.Kill() })
	return hit.Load, func() {
		t.Stop()
		stopCtx()
	}
}

// kill ends the worker (idempotent) and waits for it to be reaped.
func (w *jsWorker) kill() {
	_ = w.proc.Kill()
	w.toW.Close()
	<-w.exited
	w.fromW.Close()
}

// describeExit says why a worker stopped talking.
func (w *jsWorker) describeExit(readErr error) string {
	select {
	case <-w.exited:
	case <-time.After(2 * time.Second):
		_ = w.proc.Kill()
		<-w.exited
	}
	msg := "exited"
	if w.state == nil {
		msg = "lost (could not be waited for)"
	} else if ws, ok := w.state.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			msg = "killed by signal " + ws.Signal().String()
		case ws.Exited():
			msg = fmt.Sprintf("exited with status %d", ws.ExitStatus())
		}
	}
	if s := bytes.TrimSpace(w.stderr.Bytes()); len(s) > 0 {
		if len(s) > 400 {
			s = s[len(s)-400:]
		}
		msg += ": " + string(s)
	}
	if readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, io.ErrUnexpectedEOF) {
		msg += " (" + readErr.Error() + ")"
	}
	return msg
}

// boundedBuffer keeps the first max bytes written and the last max/4 of the
// rest: a worker's stderr ends with what killed it (V8's out-of-memory report
// comes last, after whatever the call printed before).
type boundedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	tail    []byte // the last max/4 bytes past the first max
	dropped int64  // bytes neither in buf nor in tail
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max - b.buf.Len(); room > 0 {
		k := min(room, len(p))
		b.buf.Write(p[:k])
		p = p[k:]
	}
	if len(p) > 0 {
		keep := b.max / 4
		b.tail = append(b.tail, p...)
		if over := len(b.tail) - keep; over > 0 {
			b.dropped += int64(over)
			b.tail = append(b.tail[:0], b.tail[over:]...)
		}
	}
	return n, nil
}

func (b *boundedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]byte(nil), b.buf.Bytes()...)
	if b.dropped > 0 {
		out = fmt.Appendf(out, "\n[... %d bytes left out ...]\n", b.dropped)
	}
	return append(out, b.tail...)
}
