package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
)

// run, holding the task's run lock, makes the workspace and runs argv in the sandbox.
// The worktree's link files are pinned while the harness runs, and the worktree is checked
// once it has ended (see secure), however it ended.
func (n *Native) run(ctx context.Context, id string, argv []string, o WrapOptions, s stdio) (int, error) {
	return n.runTracked(ctx, id, argv, o, func() (proc, error) {
		if _, err := n.ensure(ctx, id); err != nil {
			return nil, err
		}
		return n.Worktree.guard(ctx, id, func(rec record) (proc, error) { return n.start(ctx, rec, argv, o, s) })
	})
}

// start launches argv through `autobox worker exec` (jail.Start), which restricts itself
// and then runs the harness; jail fails closed where the sandbox cannot be enforced.
func (n *Native) start(ctx context.Context, rec record, argv []string, o WrapOptions, s stdio) (proc, error) {
	pol, err := n.sandboxPolicy(rec)
	if err != nil {
		return nil, err
	}
	env, err := n.harnessEnv(ctx, rec.ID, o.Env)
	if err != nil {
		return nil, err
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = rec.Path
	}
	jp := &jailProc{stderr: s.err}
	stdout, err := jp.file(s.out)
	if err != nil {
		return nil, err
	}
	stderr, err := jp.file(s.err)
	if err != nil {
		jp.closeWriters()
		return nil, err
	}
	spec := &jail.Spec{Argv: argv, Dir: cwd, Env: env, Sandbox: *pol, Limits: n.o.Limits}
	if pol.PrivateNetwork {
		if err := jp.startProxy(ctx, n, spec); err != nil {
			jp.closeWriters()
			return nil, err
		}
	}
	jp.tree, err = jail.Start(n.exe, spec, stdout, stderr)
	jp.closeWriters() // the launcher has its copies; the copiers end when the tree exits
	if err != nil {
		jp.closeProxy()
		jp.copies.Wait()
		if errors.Is(err, jail.ErrUnsupported) {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("starting task %s in its sandbox: %w", rec.ID, err)
	}
	// No memory limit and no clock: a harness runs as long as it needs, with
	// what memory the host has.
	jp.run = cmdrun.Enforce(jp.tree, cmdrun.Limits{Command: n.o.Limits, Names: taskNames})
	return jp, nil
}

// jailProc is a harness tree started by jail. Writers that are not files get a pipe and a
// copier, since the launcher hands the command real file descriptors.
type jailProc struct {
	tree    *jail.Tree
	run     *cmdrun.Run // holds the tree to the limits the kernel does not
	writers []*os.File  // our copies of pipe write ends, closed once the launcher has started
	copies  sync.WaitGroup
	mu      sync.Mutex   // serialises the copiers: stdout and stderr may be one writer
	stderr  io.Writer    // the run's stderr, for what the proxy refused
	proxy   *proxy.Proxy // with AllowHosts: the run's proxy and its call
	call    *proxy.Call
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (j *jailProc) file(w io.Writer) (*os.File, error) {
	if w == nil {
		w = io.Discard
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	j.writers = append(j.writers, pw)
	j.copies.Add(1)
	go func() {
		defer j.copies.Done()
		defer r.Close()
		io.Copy(lockedWriter{&j.mu, w}, r)
	}()
	return pw, nil
}

func (j *jailProc) closeWriters() {
	for _, w := range j.writers {
		w.Close()
	}
	j.writers = nil
}

// startProxy gives a harness with an allowlist its proxy, in this process, for
// the run (see package proxy): the launcher hands it the harness's connections.
func (j *jailProc) startProxy(ctx context.Context, n *Native, spec *jail.Spec) error {
	hosts, err := policy.ParseAllowHosts("--allow-host", n.o.AllowHosts)
	if err != nil {
		return err
	}
	if j.proxy, err = proxy.New(os.TempDir()); err != nil {
		return fmt.Errorf("starting the network proxy: %w", err)
	}
	if j.call, err = j.proxy.Register(ctx, hosts, nil); err != nil {
		j.proxy.Close()
		return err
	}
	hp := "127.0.0.1:" + strconv.Itoa(jail.ProxyPort)
	spec.ProxySocket, spec.ProxyToken, spec.Sandbox.ProxyPort = j.proxy.Socket(), j.call.Token(), jail.ProxyPort
	spec.Sandbox.ReadOnly = append(spec.Sandbox.ReadOnly, n.exe) // ssh's proxy command
	spec.Env = append(spec.Env, proxy.Env(n.exe, "http://"+hp, "socks5h://"+hp)...)
	return nil
}

// closeProxy ends the run's proxy, if any, and returns what it recorded.
func (j *jailProc) closeProxy() proxy.Record {
	if j.proxy == nil {
		return proxy.Record{}
	}
	rec := j.call.Close()
	j.proxy.Close()
	return rec
}

func (j *jailProc) wait() (int, error) {
	end := j.run.Wait()
	res, err := end.Exit, end.Err
	j.copies.Wait()
	if j.proxy != nil {
		for _, name := range res.Lookups {
			j.call.Deny(proxy.LookupDenial(name))
		}
		// The run's output is the harness's own: what the proxy refused is said
		// after it, on its stderr.
		if block := j.closeProxy().DeniedBlock(); block != "" && j.stderr != nil {
			io.WriteString(j.stderr, block)
		}
	}
	switch killed := end.KilledBy; {
	case killed.Kind != "":
		if j.stderr != nil {
			fmt.Fprintf(j.stderr, "autobox task run: %s\n", killed.Text)
		}
		return killCode(killed.Kind), nil
	case err != nil:
		return -1, fmt.Errorf("harness: %w", err)
	case !res.Started:
		return -1, fmt.Errorf("starting harness: %s", res.SpawnError)
	case res.Signal != "":
		return signalCode(res.Signal), nil
	}
	return res.ExitCode, nil
}

// kill ends the tree for a stop (ctx, a signal, `autobox task stop`), which
// is no limit's: the run ends as the harness did.
func (j *jailProc) kill() { j.tree.Kill() }

// taskNames are the limits' names in `task run`'s texts: its flags.
var taskNames = watchdog.Names{Processes: "--max-processes", Written: "--max-write-mb", CPU: "--cpu-ms"}

// killCode is run's exit status for a kill at a limit.
func killCode(k cmdrun.KillKind) int {
	switch k {
	case cmdrun.KilledCPU:
		return exitCPU
	case cmdrun.KilledDisk:
		return exitDisk
	}
	return exitProcesses
}
