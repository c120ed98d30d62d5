package jail

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/autobox-dev/autobox/internal/launcherbin"
	"github.com/autobox-dev/autobox/internal/pace"
	"github.com/autobox-dev/autobox/policy"
)

// Pool keeps launchers started ahead of time, so that Start pays neither for
// the launcher's fork/exec nor for its runtime start, nor for moving it into
// its memory cgroup (see memCgroups): only for setting the limit, sending the
// spec and starting the command. A used launcher is replaced when its tree
// finishes; with calls back to back, a size of 2 keeps one ready. Each idle
// launcher is a process plus one locked supervisor thread (its Pdeathsig
// parent). Safe for concurrent use.
type Pool struct {
	exe     string
	size    int             // launchers kept ready (0: none, each Start spawns its own)
	base    *policy.Sandbox // what idle launchers prepare for (nil: nothing)
	emptied chan struct{}   // a call took the last ready launcher
	calls   *pace.Calls     // spaced-out calls get their replacement after the answer
	// ahead, in a pool of one (NewPoolOfOne), is closed once the launcher
	// started with the pool is ready or failed; nil in other pools.
	ahead chan struct{}
	// memory is the limit of the last call, which new launchers' cgroups get
	// ahead of the next (-1: none yet).
	memory atomic.Int64
	ready  chan *Tree
	wg     sync.WaitGroup // refills, and trees handed out until their cgroup is gone

	mu     sync.Mutex
	closed bool
}

// NewPool keeps size launchers of exe ready. If base is not nil, idle
// launchers build what they can of a sandbox that extends it (see prepared): a
// spec's Sandbox extends base when it has base's network and exec rights and
// every path of base, with the same rights. Size 0 keeps none: each Start
// spawns the launcher of its call and nothing is started ahead or after (for a
// process that runs one command, such as `autobox exec`, where idle launchers
// would be started only to be ended unused).
func NewPool(exe string, size int, base *policy.Sandbox) *Pool {
	if size < 0 {
		size = 0
	}
	p := &Pool{exe: exe, size: size, base: base, ready: make(chan *Tree, max(size, 1)), emptied: make(chan struct{}, max(size, 1)), calls: pace.NewCalls()}
	p.memory.Store(-1)
	for i := 0; i < size; i++ {
		p.refill()
	}
	return p
}

// NewPoolOfOne is the pool of a process that runs one command (`autobox
// exec`): that command's launcher is started at once, in the background,
// while the process goes on with its own start and the call's policy. The
// first Start takes it, waiting for it if it is on its way; Starts after that
// spawn their own, as in a pool of size 0. Its launchers prepare nothing
// ahead: the call comes as soon as they run, and a prepared network (the
// proxy's listeners and the transparent path's rules, milliseconds of
// netlink) would be thrown away by the calls without network that most
// command lines are.
func NewPoolOfOne(exe string) *Pool {
	p := NewPool(exe, 0, nil)
	p.ahead = make(chan struct{})
	p.goTracked(func() {
		defer close(p.ahead)
		// The small launcher's copy into its memfd (the first launcher of a
		// process makes it) goes on beside the making of the cgroups.
		go launcherbin.Path(exe)
		if t, err := spawn(p.exe, probeCgroups().create(p.memory.Load()), probeCmdCgroups().create()); err == nil {
			p.park(t)
		} // else Start spawns on demand and reports the error
	})
	return p
}

// goTracked runs f in a goroutine that Close waits for, unless the pool is
// closed.
func (p *Pool) goTracked(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// refill starts one launcher in the background and parks it in ready (none
// in a pool of size 0).
func (p *Pool) refill() {
	if p.size == 0 {
		return
	}
	p.goTracked(func() {
		t, err := p.spawn()
		if err != nil {
			return // Start spawns on demand and reports the error
		}
		p.park(t)
	})
}

// park puts an idle launcher in ready, or ends it when the pool is closed or
// full.
func (p *Pool) park(t *Tree) {
	p.mu.Lock()
	if !p.closed {
		select {
		case p.ready <- t:
			p.mu.Unlock()
			return
		default:
		}
	}
	p.mu.Unlock()
	release(t)
}

// spawn starts a launcher in a cgroup of its own and has it prepare for base.
func (p *Pool) spawn() (*Tree, error) {
	t, err := spawn(p.exe, probeCgroups().create(p.memory.Load()), probeCmdCgroups().create())
	if err != nil || p.base == nil {
		return t, err
	}
	if err := t.prepare(p.base); err != nil {
		release(t)
		return nil, err
	}
	return t, nil
}

// release ends an unused launcher.
func release(t *Tree) {
	t.released.Store(true)
	t.closeCtl()
	<-t.reaped
}

// Start is jail.Start with a launcher from the pool (or a new one if none is
// ready); the pool is refilled in the background. memory > 0 is a hard limit
// in bytes on the memory of the whole tree, where the host lets this process
// make cgroups (see Tree.OOMKilled); 0 sets none.
func (p *Pool) Start(spec *Spec, stdout, stderr *os.File, memory int64) (*Tree, error) {
	return p.start(spec, stdout, stderr, memory, nil)
}

// StartInteractive is Start for a command that will run long and read input
// (a session): it gets in's Stdin as its stdin, and on a terminal a session
// of its own (see Interactive). The pool is refilled at once, as the launcher
// will not come back soon. Signal reaches the command's process group.
func (p *Pool) StartInteractive(spec *Spec, stdout, stderr *os.File, memory int64, in *Interactive) (*Tree, error) {
	if in == nil || in.Stdin == nil {
		return nil, fmt.Errorf("%w: an interactive command without stdin", ErrPolicy)
	}
	return p.start(spec, stdout, stderr, memory, in)
}

func (p *Pool) start(spec *Spec, stdout, stderr *os.File, memory int64, in *Interactive) (*Tree, error) {
	if err := checkSpec(spec, stdout, stderr); err != nil {
		return nil, err
	}
	if memory < 0 {
		return nil, fmt.Errorf("%w: memory limit %d", ErrPolicy, memory)
	}
	if p.ahead != nil {
		<-p.ahead // the launcher started ahead
	}
	if spec.Unsafe && p.base != nil {
		// Preparing gave up capabilities that an unsafe command (run as root)
		// keeps.
		return nil, fmt.Errorf("%w: an unsafe command needs a pool that does not prepare sandboxes", ErrPolicy)
	}
	p.memory.Store(memory)
	if wholeNetworkInUserNS(spec) {
		// A prepared launcher is in a network namespace of its own, and in a
		// user namespace it cannot go back to the host's: a launcher of its
		// own, unprepared, for the whole network.
		t, err := spawn(p.exe, probeCgroups().create(memory), probeCmdCgroups().create())
		if err != nil {
			return nil, err
		}
		if err := t.send(spec, stdout, stderr, memory, in); err != nil {
			release(t)
			return nil, err
		}
		return t, nil
	}
	spaced := p.calls.Spaced()
	for {
		var t *Tree
		pooled := true
		select {
		case t = <-p.ready:
			if len(p.ready) == 0 {
				select {
				case p.emptied <- struct{}{}:
				default:
				}
			}
		default:
			p.refill() // a failed refill must not leave the pool empty for good
			var err error
			if t, err = p.spawn(); err != nil {
				return nil, err
			}
			pooled = false
		}
		if in != nil {
			p.handOutLong(t)
		} else {
			p.handOut(t, spaced)
		}
		select {
		case <-t.finished: // died while idle (killed from outside?)
			release(t)
			continue
		default:
		}
		err := t.send(spec, stdout, stderr, memory, in)
		if err == nil {
			return t, nil
		}
		release(t)
		if !pooled || !errors.Is(err, ErrLauncher) {
			return nil, err
		}
	}
}

// handOut refills the pool once t is done, not now: starting a launcher (fork,
// exec, the Go runtime's start: milliseconds of CPU) while the command runs
// competes with it for the CPU. When calls are spaced out and another launcher
// is ready, it waits a little longer still (see package pace), until t's
// launcher has exited and pace.AfterCall more, unless a call takes the last ready
// launcher meanwhile. Close waits for t's cgroup to be removed.
func (p *Pool) handOut(t *Tree, spaced bool) {
	p.goTracked(func() {
		<-t.finished
		if spaced && len(p.ready) > 0 {
			p.waitToRefill(t)
		}
		p.refill()
		<-t.reaped
	})
}

// handOutLong refills the pool at once for a tree that will run long (a
// session): waiting for it to end would leave the pool a launcher short all
// that time. Close waits for t's cgroup to be removed.
func (p *Pool) handOutLong(t *Tree) {
	p.refill()
	p.goTracked(func() { <-t.reaped })
}

// waitToRefill waits until t's launcher has exited and then pace.AfterCall, or
// until a call takes the last ready launcher, whichever comes first.
func (p *Pool) waitToRefill(t *Tree) {
	for { // a signal from an earlier burst is stale if the pool is not empty
		select {
		case <-p.emptied:
			if len(p.ready) == 0 {
				return
			}
			continue
		case <-t.reaped:
		}
		break
	}
	select {
	case <-time.After(pace.AfterCall):
	case <-p.emptied:
	}
}

// Close ends the idle launchers and waits for them, and for the trees already
// started to end (it does not end them) and their cgroups to be removed.
// Start after Close spawns launchers on demand.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	for {
		select {
		case t := <-p.ready:
			release(t)
		default:
			return
		}
	}
}
