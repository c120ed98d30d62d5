package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/autobox-dev/autobox/policy"
)

// NativeOptions configure the native kind. A nil *NativeOptions is the zero value.
type NativeOptions struct {
	Options
	// NoNetwork denies the harness every socket but AF_UNIX and all TCP. The zero value
	// allows network, because harnesses call their model APIs.
	NoNetwork bool
	// AllowHosts narrows the network to these hosts, reached through autobox's proxy
	// from a network of the harness's own (entries as exec_command's allowHosts). It
	// needs a network namespace (root); not with NoNetwork.
	AllowHosts []string
	// ReadOnly are extra host paths the harness may read and execute (where it is
	// installed, its configuration). Canonical: a path through a symbolic link is
	// refused (ErrInvalid), as exec_command refuses such a hostPath.
	ReadOnly []string
	// ReadWrite are extra host paths it may write. Canonical; none may overlap the
	// project root, the repository's git directory or the tasks directory (ErrInvalid).
	ReadWrite []string
	// Env names variables passed from the environment of `autobox task run` to the
	// harness; names only. Nothing else of that environment is passed.
	Env []string
	// Exe is the autobox binary that Wrap's argv runs and that launches the sandbox;
	// "" means os.Executable().
	Exe string
	// Limits are the harness tree's resource limits (processes, bytes written, CPU
	// time, open files); nil means exec_command's defaults (DefaultLimits). The
	// kernel holds the tree to them where it can (rlimits, a pids cgroup), the
	// watchdog elsewhere; past one the harness is killed (see Native.run).
	Limits *policy.Limits
}

// DefaultLimits are exec_command's default limits: 256 processes and threads,
// 1024 MB written, 1024 open files, no CPU limit.
func DefaultLimits() policy.Limits {
	return policy.Limits{Processes: policy.ExecDefaultMaxProcesses, WriteBytes: policy.ExecDefaultMaxWriteMb << 20, OpenFiles: policy.ExecDefaultMaxOpenFiles}
}

// Native is the native kind: the task's worktree, and the harness running under autobox's
// OS sandbox (package jail; on other platforms it fails closed). See sandboxPolicy for what
// it may write and where Landlock is broader than the issue asks. Stop (and Cleanup) stop
// the task's `autobox task run`, which kills the harness's whole process tree.
type Native struct {
	*Worktree
	o   NativeOptions
	exe string
}

var _ Sandbox = (*Native)(nil)

// NewNative resolves the project and checks the options. It refuses a repository with
// extensions.worktreeConfig, whose per-worktree config file lies in the admin directory the
// sandbox can write: host git would read it while the harness runs (autobox removes one the
// harness made when the run ends, for a repository that turns the extension on later).
func NewNative(opts *NativeOptions) (*Native, error) {
	var o NativeOptions
	if opts != nil {
		o = *opts
	}
	for _, e := range o.Env {
		if strings.Contains(e, "=") {
			return nil, fmt.Errorf("%w: native env %q: give a name; the value comes from the environment", ErrInvalid, e)
		}
	}
	if _, err := envNames(o.Env); err != nil {
		return nil, err
	}
	if len(o.AllowHosts) > 0 {
		if o.NoNetwork {
			return nil, fmt.Errorf("%w: --allow-host and --no-network together", ErrInvalid)
		}
		if _, err := policy.ParseAllowHosts("--allow-host", o.AllowHosts); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	w, err := newWorktree(&o.Options, KindNative)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly, err = canonicalAll("--ro", o.ReadOnly); err != nil {
		return nil, err
	}
	if o.ReadWrite, err = canonicalAll("--rw", o.ReadWrite); err != nil {
		return nil, err
	}
	for _, p := range o.ReadWrite {
		for _, protected := range []string{w.repo.root, w.repo.common, w.tasksDir} {
			if policy.Within(p, protected) || policy.Within(protected, p) {
				return nil, fmt.Errorf("%w: writable path %s overlaps %s", ErrInvalid, p, protected)
			}
		}
	}
	wtConfig, err := git(context.Background(), w.repo.root, nil, "config", "--type=bool", "--default=false", "extensions.worktreeConfig")
	if err != nil {
		return nil, err
	}
	if wtConfig == "true" {
		return nil, fmt.Errorf("%w: native kind with extensions.worktreeConfig: the sandbox could write config.worktree, which host git reads", ErrUnsupported)
	}
	if o.Limits == nil {
		l := DefaultLimits()
		o.Limits = &l
	}
	if l := o.Limits; l.Processes < 0 || l.OpenFiles < 0 || l.CPU < 0 {
		return nil, fmt.Errorf("%w: native limits: processes %d, open files %d, CPU %v: none may be negative", ErrInvalid, l.Processes, l.OpenFiles, l.CPU)
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("autobox binary: %w", err)
		}
	}
	return &Native{Worktree: w, o: o, exe: exe}, nil
}

// canonicalAll checks that each path is absolute and canonical. A path through a
// symbolic link is refused, not resolved: every run is given the same flags, and a
// harness that may write a directory could otherwise put a link where a later
// run's path passes (--rw a --rw a/b, a/b swapped for a link to ~/.ssh) and widen
// what that run may write. what is the flag's name, for the error.
func canonicalAll(what string, paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%w: %s %q is not absolute", ErrInvalid, what, p)
		}
		c, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, what, err)
		}
		if msg := policy.LinkProblem(what, p, c); msg != "" {
			return nil, fmt.Errorf("%w: %s", ErrInvalid, msg)
		}
		out = append(out, c)
	}
	return out, nil
}

// Wrap returns the argv of `autobox task run --kind native` for this task, which makes the
// workspace if needed and runs argv in the sandbox. Variable values never appear: the
// wrapper passes the named variables from its own environment.
func (n *Native) Wrap(argv []string, o WrapOptions) ([]string, error) {
	if err := checkWrap(argv, o); err != nil {
		return nil, err
	}
	out := []string{n.exe, "task", "run", "--kind", string(KindNative),
		"--project", n.repo.root, "--tasks-dir", n.tasksDir, "--id", o.ID}
	if n.base != "" {
		out = append(out, "--base", n.base)
	}
	if n.o.NoNetwork {
		out = append(out, "--no-network")
	}
	for _, h := range n.o.AllowHosts {
		out = append(out, "--allow-host", h)
	}
	for _, p := range n.o.ReadOnly {
		out = append(out, "--ro", p)
	}
	for _, p := range n.o.ReadWrite {
		out = append(out, "--rw", p)
	}
	out = append(out, limitFlags(n.o.Limits)...)
	names, err := envNames(n.o.Env, o.Env)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		out = append(out, "--env", name)
	}
	if o.Cwd != "" {
		out = append(out, "--cwd", o.Cwd)
	}
	out = append(out, "--")
	return append(out, argv...), nil
}

// Endpoint is on the host's loopback interface, which the sandbox shares. With NoNetwork
// there is none: TCP is denied. With AllowHosts the harness reaches it through the proxy
// only if the list names localhost:PORT.
func (n *Native) Endpoint(port int) (string, error) {
	if n.o.NoNetwork {
		return "", fmt.Errorf("%w: no host endpoint: the task's network is denied", ErrUnsupported)
	}
	return n.Worktree.Endpoint(port)
}

// harnessEnv is the harness's whole environment: a small base (PATH, HOME and TMPDIR in
// the task's scratch, LANG), the named variables from this process's environment, the
// host's git identity (the harness cannot read ~/.gitconfig), and automatic gc and
// maintenance off (they would write packs, which the sandbox denies).
func (n *Native) harnessEnv(ctx context.Context, id string, extra []string) ([]string, error) {
	p := n.paths(id)
	env := map[string]string{
		"PATH":            "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME":            filepath.Join(p.scratch, "home"),
		"TMPDIR":          filepath.Join(p.scratch, "tmp"),
		"LANG":            "C.UTF-8",
		"AUTOBOX_TASK_ID": id,
	}
	// Exit status 1 (neither is set) is not an error: git then asks the harness's config.
	ids, _ := git(ctx, n.repo.root, nil, "config", "--get-regexp", `^user\.(name|email)$`)
	for _, line := range strings.Split(ids, "\n") {
		key, v, _ := strings.Cut(line, " ")
		if v == "" {
			continue
		}
		suffix := strings.ToUpper(strings.TrimPrefix(key, "user."))
		env["GIT_AUTHOR_"+suffix], env["GIT_COMMITTER_"+suffix] = v, v
	}
	names, err := envNames(n.o.Env, extra)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	for _, kv := range extra {
		if name, v, ok := strings.Cut(kv, "="); ok {
			env[name] = v
		}
	}
	for k, v := range map[string]string{"GIT_CONFIG_COUNT": "2",
		"GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
		"GIT_CONFIG_KEY_1": "maintenance.auto", "GIT_CONFIG_VALUE_1": "false"} {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// limitFlags are the `task run` flags that give l to the run Wrap's argv makes.
func limitFlags(l *policy.Limits) []string {
	writeMb := int64(-1)
	if l.WriteBytes >= 0 {
		writeMb = l.WriteBytes >> 20
	}
	return []string{"--max-processes", strconv.Itoa(l.Processes), "--max-write-mb", strconv.FormatInt(writeMb, 10),
		"--cpu-ms", strconv.FormatInt(l.CPU.Milliseconds(), 10), "--max-open-files", strconv.Itoa(l.OpenFiles)}
}
