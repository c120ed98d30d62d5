package task

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/autobox-dev/autobox/policy"
)

// Exit statuses of Main. `run` exits with the harness's status instead of exitOK.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitRefused = 3 // cleanup kept a dirty worktree

	// run: the harness was killed at a limit, as `autobox exec` reports it.
	exitCPU       = 152 // 128 + SIGXCPU
	exitDisk      = 153 // 128 + SIGXFSZ
	exitProcesses = 154
)

const helpText = `Usage: autobox task COMMAND --id ID [flags] [-- ARGV...]

Per-task sandboxes for agent harnesses: a git worktree per task on branch autobox/ID,
under $AUTOBOX_TASKS_DIR (default $XDG_DATA_HOME/autobox-tasks).

Commands:
  workspace   create the task's worktree if missing, or check it (undoing what a sandbox
              changed in its git files); print its directory
  wrap        print the argv that runs ARGV inside the task's sandbox (no side effects)
  run         workspace + wrap + run ARGV; exits with ARGV's status
  endpoint    print the URL a sandboxed process uses to reach --port on the host
  stop        stop what the task runs (best effort)
  cleanup     remove the task's worktree, keeping its branch; a dirty worktree is kept
              (exit status 3) unless --force
  list        list the project's tasks with kind, branch and dirty state (no --id)

Kinds (--kind):
  worktree    the harness runs on the host in the worktree (default)
  native      the harness runs under autobox's OS sandbox: it writes its worktree, its
              scratch HOME/TMPDIR and, in .git, only what a commit on its branch needs;
              its stdin is /dev/null; exec_command's limits (--max-processes 256,
              --max-write-mb 1024, --max-open-files 1024, --cpu-ms) hold its tree
  docker      the harness runs in docker run -i --rm, the worktree mounted at its path;
              stop and cleanup stop and remove its container (docker stop with
              --stop-grace, then rm -f), as run does when it is signalled; a harness run
              with --user UID:GID is given the worktree (as root)

stop, cleanup and endpoint use the kind recorded for the task (task list shows it):
they need no --kind, --image or --docker.

Exit status: 0 done, 1 failed, 2 usage error, 3 cleanup refused (dirty worktree);
run exits with the harness's status, or (native) 152, 153, 154 when the harness was
killed at its CPU, write or process limit (the reason is on stderr).

Examples:
  autobox task workspace --id fix-123
  autobox task run --kind native --id fix-123 --env ANTHROPIC_API_KEY -- claude -p "fix the test"
  autobox task wrap --kind docker --image org/harness:1 --id fix-123 --json -- claude
  autobox task endpoint --id fix-123 --port 8700
  autobox task stop --id fix-123 --stop-grace 2s
  autobox task cleanup --id fix-123 --json
  autobox task list --project ~/src/app --json

Flags:
`

// flagUse says which commands and kinds a flag applies to ("" = all).
var flagUse = map[string]struct{ commands, kinds string }{
	"port":           {"endpoint", ""},
	"force":          {"cleanup", ""},
	"cwd":            {"wrap run", ""},
	"no-network":     {"", "native"},
	"allow-host":     {"", "native"},
	"max-processes":  {"", "native"},
	"max-write-mb":   {"", "native"},
	"cpu-ms":         {"", "native"},
	"max-open-files": {"", "native"},
	"ro":             {"", "native"},
	"rw":             {"", "native"},
	"env":            {"", "native docker"},
	"image":          {"", "docker"},
	"mount":          {"", "docker"},
	"user":           {"", "docker"},
	"home":           {"", "docker"},
	"run-arg":        {"", "docker"},
	"docker":         {"", "docker"},
	"stop-grace":     {"run stop cleanup", "docker"},
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type cli struct {
	command, kind, project, id, tasksDir, base, cwd string
	json, noNetwork, force                          bool
	port                                            int
	ro, rw, env, mounts, runArgs, allowHosts        listFlag
	limits                                          policy.Limits
	image, user, home, docker                       string
	stopGrace                                       time.Duration
	kindSet                                         bool // --kind was given
	argv                                            []string
	stdin                                           io.Reader
	stdout, stderr                                  io.Writer
}

// Main implements `autobox task ...`; args are what follows "task". It returns the exit
// status (see the help text).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := c.flagSet()
	if len(args) == 0 {
		fs.Usage()
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	case "workspace", "wrap", "run", "endpoint", "stop", "cleanup", "list":
		c.command = args[0]
	default:
		fmt.Fprintf(stderr, "autobox task: unknown command %q (see autobox task --help)\n", args[0])
		return exitUsage
	}
	// Help asked for goes to stdout with exit 0; a flag error to stderr.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args[1:])
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "autobox task %s: %v (see autobox task --help)\n", c.command, err)
		return exitUsage
	}
	c.argv = fs.Args()
	if err := c.check(fs); err != nil {
		fmt.Fprintf(stderr, "autobox task %s: %v (see autobox task --help)\n", c.command, err)
		return exitUsage
	}
	code, err := c.do(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "autobox task %s: %v\n", c.command, err)
		if errors.Is(err, ErrInvalidID) || errors.Is(err, ErrInvalid) {
			return exitUsage
		}
		return exitFailed
	}
	return code
}

func (c *cli) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("autobox task", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), helpText)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.kind, "kind", string(KindWorktree), "sandbox kind: worktree, native or docker")
	fs.StringVar(&c.project, "project", ".", "a directory in the project's git working tree")
	fs.StringVar(&c.id, "id", "", "task id: [A-Za-z0-9._-], up to 64, starting with a letter or digit")
	fs.StringVar(&c.tasksDir, "tasks-dir", "", "where task worktrees live (default $AUTOBOX_TASKS_DIR, else $XDG_DATA_HOME/autobox-tasks)")
	fs.StringVar(&c.base, "base", "", "commit-ish a new task branch starts from (default HEAD)")
	fs.BoolVar(&c.json, "json", false, "print JSON for orchestrators")
	fs.IntVar(&c.port, "port", 0, "endpoint: host port")
	fs.BoolVar(&c.force, "force", false, "cleanup: remove a dirty worktree too (the branch is kept)")
	fs.StringVar(&c.cwd, "cwd", "", "wrap, run: absolute directory to start in (default the worktree)")
	fs.BoolVar(&c.noNetwork, "no-network", false, "native: deny network (default allowed)")
	fs.Var(&c.allowHosts, "allow-host", "native: only this `HOST` (repeatable), through autobox's proxy: example.com, *.example.com, example.com:8443, localhost:PORT")
	fs.Var(&c.ro, "ro", "native: extra read-only `PATH` (repeatable)")
	fs.Var(&c.rw, "rw", "native: extra writable `PATH` (repeatable)")
	fs.Var(&c.env, "env", "native, docker: pass variable `NAME` from this environment (repeatable)")
	c.limits = DefaultLimits()
	fs.IntVar(&c.limits.Processes, "max-processes", c.limits.Processes, "native: processes and threads alive at once in the harness's tree (0: no limit)")
	fs.Func("max-write-mb", fmt.Sprintf("native: `MB` the harness's tree may write to files; one file past it gets EFBIG (default %d; -1: no limit)", c.limits.WriteBytes>>20), func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 || n > policy.ExecMaxMaxWriteMb {
			return fmt.Errorf("want -1 to %d", policy.ExecMaxMaxWriteMb)
		}
		c.limits.WriteBytes = max(-1, n<<20)
		return nil
	})
	fs.Func("cpu-ms", "native: CPU time of the harness's whole tree in `ms` (default 0: no limit)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return errors.New("want a number of milliseconds")
		}
		c.limits.CPU = time.Duration(n) * time.Millisecond
		return nil
	})
	fs.IntVar(&c.limits.OpenFiles, "max-open-files", c.limits.OpenFiles, "native: open files per process (RLIMIT_NOFILE; 0: inherited)")
	fs.StringVar(&c.image, "image", "", "docker: image (required)")
	fs.Var(&c.mounts, "mount", "docker: bind mount `SRC:DST[:ro]` (repeatable)")
	fs.StringVar(&c.user, "user", "", "docker: --user")
	fs.StringVar(&c.home, "home", "", "docker: HOME in the container")
	fs.Var(&c.runArgs, "run-arg", "docker: extra docker run `ARG` (repeatable)")
	fs.StringVar(&c.docker, "docker", "", "docker: client binary (default docker on PATH; podman works too)")
	fs.Func("stop-grace", "docker: `DURATION` the harness has between SIGTERM and SIGKILL when its container is stopped, in whole seconds (default 10s; 0: SIGKILL at once)", func(v string) error {
		g, err := time.ParseDuration(v)
		if err != nil || g < 0 {
			return errors.New("want a duration such as 10s or 0")
		}
		c.stopGrace = g
		if g == 0 {
			c.stopGrace = -1 // DockerOptions: negative is none
		}
		return nil
	})
	return fs
}

// check refuses flags that do not apply and missing required ones.
func (c *cli) check(fs *flag.FlagSet) error {
	switch Kind(c.kind) {
	case KindWorktree, KindNative, KindDocker:
	default:
		return fmt.Errorf("unknown kind %q", c.kind)
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "kind" {
			c.kindSet = true
		}
	})
	if c.id != "" && (c.command == "stop" || c.command == "cleanup" || c.command == "endpoint") {
		if err := c.recordedKind(); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		use, ok := flagUse[f.Name]
		switch {
		case !ok || err != nil:
		case use.commands != "" && !strings.Contains(" "+use.commands+" ", " "+c.command+" "):
			err = fmt.Errorf("--%s does not apply to %s", f.Name, c.command)
		case use.kinds != "" && !strings.Contains(" "+use.kinds+" ", " "+c.kind+" "):
			err = fmt.Errorf("--%s does not apply to kind %s", f.Name, c.kind)
		}
	})
	switch {
	case err != nil:
		return err
	case c.command == "list" && c.id != "":
		return errors.New("list takes no --id")
	case c.command != "list" && c.id == "":
		return errors.New("--id is required")
	case (c.command == "wrap" || c.command == "run") && len(c.argv) == 0:
		return errors.New("give the harness after --: ... -- ARGV")
	case c.command != "wrap" && c.command != "run" && len(c.argv) > 0:
		return fmt.Errorf("unexpected arguments %q", c.argv)
	case c.command == "endpoint" && c.port == 0:
		return errors.New("--port is required")
	case Kind(c.kind) == KindDocker && c.image == "" && (c.command == "wrap" || c.command == "run"):
		return errors.New("--image is required for kind docker")
	}
	return nil
}

// runner is what every kind offers the command line beyond Sandbox.
type runner interface {
	Sandbox
	run(ctx context.Context, id string, argv []string, o WrapOptions, s stdio) (int, error)
}

func (c *cli) sandbox() (runner, error) {
	base := Options{Project: c.project, TasksDir: c.tasksDir, Base: c.base, Log: c.stderr}
	switch Kind(c.kind) {
	case KindNative:
		limits := c.limits
		return NewNative(&NativeOptions{Options: base, NoNetwork: c.noNetwork, AllowHosts: c.allowHosts, ReadOnly: c.ro, ReadWrite: c.rw, Env: c.env, Limits: &limits})
	case KindDocker:
		var mounts []Mount
		for _, m := range c.mounts {
			parts := strings.Split(m, ":")
			if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "ro") {
				return nil, fmt.Errorf("%w: --mount %q: want SRC:DST or SRC:DST:ro", ErrInvalid, m)
			}
			mounts = append(mounts, Mount{Source: parts[0], Target: parts[1], ReadOnly: len(parts) == 3})
		}
		return NewDocker(&DockerOptions{Options: base, Image: c.image, Mounts: mounts, User: c.user,
			Home: c.home, Env: c.env, RunArgs: c.runArgs, Docker: c.docker, StopGrace: c.stopGrace})
	}
	return NewWorktree(&base)
}

func (c *cli) do(ctx context.Context) (int, error) {
	if c.command == "list" {
		w, err := NewWorktree(&Options{Project: c.project, TasksDir: c.tasksDir, Log: c.stderr})
		if err != nil {
			return 0, err
		}
		infos, err := w.List(ctx)
		if err != nil {
			return 0, err
		}
		return exitOK, c.printList(infos)
	}
	sb, err := c.sandbox()
	if err != nil {
		return 0, err
	}
	switch c.command {
	case "workspace":
		cwd, err := sb.Workspace(ctx, c.id)
		if err != nil {
			return 0, err
		}
		return exitOK, c.print(cwd, map[string]string{"id": c.id, "cwd": cwd, "branch": Branch(c.id)})
	case "wrap":
		argv, err := sb.Wrap(c.argv, WrapOptions{ID: c.id, Cwd: c.cwd})
		if err != nil {
			return 0, err
		}
		return exitOK, c.print(shellJoin(argv), map[string][]string{"argv": argv})
	case "run":
		if Kind(c.kind) == KindNative {
			if err := checkCeiling(c); err != nil {
				return 0, err
			}
		}
		return sb.run(ctx, c.id, c.argv, WrapOptions{ID: c.id, Cwd: c.cwd}, stdio{in: c.stdin, out: c.stdout, err: c.stderr})
	case "endpoint":
		url, err := sb.Endpoint(c.port)
		if err != nil {
			return 0, err
		}
		if d, ok := sb.(*Docker); ok && !d.HostNetwork() && loopbackOnly(c.port) {
			fmt.Fprintf(c.stderr, "autobox task endpoint: note: port %d on this host listens on loopback alone, which a container does not reach (host.docker.internal is the host's address on the container's bridge): bind the server to 0.0.0.0 (or the bridge's address), or run the harness with --run-arg --network=host, where the endpoint is http://127.0.0.1:%d\n", c.port, c.port)
		}
		return exitOK, c.print(url, map[string]string{"url": url})
	case "stop":
		if err := sb.Stop(ctx, c.id); err != nil {
			return 0, err
		}
		return exitOK, c.print("", map[string]any{"id": c.id, "stopped": true})
	}
	res, err := sb.Cleanup(ctx, c.id, c.force)
	if err != nil {
		return 0, err
	}
	code := exitOK
	text := "task " + c.id + ": nothing to clean up"
	switch {
	case res.Removed:
		text = "task " + c.id + ": removed; " + res.Detail
	case res.Dirty:
		code, text = exitRefused, "task "+c.id+": kept, "+res.Detail+"; use --force to discard them"
	}
	return code, c.print(text, res)
}

// print writes text, or v as JSON with --json. An empty text prints nothing.
func (c *cli) print(text string, v any) error {
	if c.json {
		enc := json.NewEncoder(c.stdout)
		return enc.Encode(v)
	}
	if text == "" {
		return nil
	}
	_, err := fmt.Fprintln(c.stdout, text)
	return err
}

func (c *cli) printList(infos []Info) error {
	if c.json {
		if infos == nil {
			infos = []Info{}
		}
		return c.print("", infos)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tBRANCH\tSTATE\tPATH")
	for _, in := range infos {
		state := "clean"
		switch {
		case in.Stranded:
			state = "stranded"
		case in.Dirty || in.Unchecked:
			state = in.Detail
		}
		if in.Running {
			state += ", running"
		}
		kind := string(in.Kind)
		if kind == "" {
			kind = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", in.ID, kind, in.Branch, state, in.Path)
	}
	return tw.Flush()
}

// shellJoin quotes argv for a POSIX shell, so the printed line can be pasted.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// recordedKind takes the kind (and the docker kind's client) that autobox recorded for
// the task, for the commands that act on an existing task: a task made with the docker
// kind must have its container stopped whatever flags stop and cleanup are given.
func (c *cli) recordedKind() error {
	if ValidateID(c.id) != nil {
		return nil // the command reports it
	}
	w, err := NewWorktree(&Options{Project: c.project, TasksDir: c.tasksDir})
	if err != nil {
		return nil // the command reports it
	}
	rec, err := readRecord(w.paths(c.id).record)
	if err != nil || rec.Kind == "" {
		return nil
	}
	if c.kindSet && Kind(c.kind) != rec.Kind {
		if rec.Kind == KindDocker {
			return fmt.Errorf("task %s was made with the docker kind, and --kind %s would leave its container running: give no --kind (the recorded one is used)", c.id, c.kind)
		}
		return nil // a task made again with another kind: as asked
	}
	c.kind = string(rec.Kind)
	if rec.Kind == KindDocker && c.docker == "" {
		c.docker = rec.DockerClient
	}
	return nil
}
