package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DockerOptions configure the docker kind. A nil *DockerOptions is invalid.
type DockerOptions struct {
	Options
	// Image is the container image the harness runs in: Wrap and run need it; Stop,
	// Cleanup and Endpoint do not.
	Image string
	// Mounts are extra bind mounts; none by default.
	Mounts []Mount
	// User is passed as --user; "" leaves the image's user.
	User string
	// Home is set as HOME in the container; "" leaves the image's.
	Home string
	// Env names variables passed from the environment of the process that runs the wrapped
	// argv (`-e NAME`); names only, since a value would be on the argv.
	Env []string
	// RunArgs are extra `docker run` arguments, placed just before the image.
	RunArgs []string
	// Docker is the docker client; "" means "docker", looked up on PATH when it runs.
	// "podman" runs the same arguments with Podman.
	Docker string
	// StopGrace is how long the harness has between the SIGTERM of `docker stop` and
	// its SIGKILL, in whole seconds (rounded up): 0 means DefaultStopGrace, a negative
	// value none (SIGKILL at once).
	StopGrace time.Duration
}

// DefaultStopGrace is docker's own default for `docker stop`.
const DefaultStopGrace = 10 * time.Second

// Mount is a bind mount of a host path into the container.
type Mount struct {
	Source   string `json:"source"` // absolute host path; made canonical
	Target   string `json:"target"` // absolute path in the container
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Docker is the docker kind: the task's worktree, and the harness in a `docker run -i --rm`
// container named after the project and id, with the worktree mounted at its own path.
// Inside the container the worktree's .git file names a host path that is not mounted,
// so git there needs the repository mounted through Mounts.
type Docker struct {
	*Worktree
	o    DockerOptions
	bin  string
	envs []string
}

var _ Sandbox = (*Docker)(nil)

// NewDocker checks the options and resolves the project.
func NewDocker(opts *DockerOptions) (*Docker, error) {
	if opts == nil {
		return nil, fmt.Errorf("%w: docker kind needs options", ErrInvalid)
	}
	o := *opts
	if strings.HasPrefix(o.Image, "-") {
		return nil, fmt.Errorf("%w: image %q starts with '-'", ErrInvalid, o.Image)
	}
	for _, e := range o.Env {
		if strings.Contains(e, "=") {
			return nil, fmt.Errorf("%w: docker env %q: give a name; the value comes from the environment", ErrInvalid, e)
		}
	}
	names, err := envNames(o.Env)
	if err != nil {
		return nil, err
	}
	o.Mounts = append([]Mount(nil), o.Mounts...)
	for i, m := range o.Mounts {
		if o.Mounts[i], err = checkMount(m); err != nil {
			return nil, err
		}
	}
	if o.Home != "" && !filepath.IsAbs(o.Home) {
		return nil, fmt.Errorf("%w: home %q is not absolute", ErrInvalid, o.Home)
	}
	w, err := newWorktree(&o.Options, KindDocker)
	if err != nil {
		return nil, err
	}
	bin := o.Docker
	if bin == "" {
		bin = "docker"
	}
	o.RunArgs = append([]string(nil), o.RunArgs...)
	d := &Docker{Worktree: w, o: o, bin: bin, envs: names}
	w.annotate = func(rec *record) {
		rec.DockerClient, rec.Container = bin, d.containerName(rec.ID)
	}
	return d, nil
}

// checkMount makes the source canonical and refuses what `-v src:dst[:ro]` cannot say.
func checkMount(m Mount) (Mount, error) {
	if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
		return m, fmt.Errorf("%w: mount %s:%s: both paths must be absolute", ErrInvalid, m.Source, m.Target)
	}
	src, err := filepath.EvalSymlinks(m.Source)
	if err != nil {
		return m, fmt.Errorf("%w: mount source: %w", ErrInvalid, err)
	}
	m.Source, m.Target = src, filepath.Clean(m.Target)
	if strings.Contains(m.Source, ":") || strings.Contains(m.Target, ":") {
		return m, fmt.Errorf("%w: mount %s:%s: a path contains ':'", ErrInvalid, m.Source, m.Target)
	}
	return m, nil
}

// ContainerName is the deterministic container name of task id:
// autobox-<project slug>-<id>, in docker's name alphabet.
func (d *Docker) ContainerName(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return d.containerName(id), nil
}

// containerName is ContainerName of a valid id.
func (d *Docker) containerName(id string) string {
	return "autobox-" + filepath.Base(d.projDir) + "-" + id
}

// Workspace removes a stale container of the task's name, then makes the worktree, or
// checks it (see secure): the container can write it, .git included, so autobox checks it
// again whenever it hands it out.
func (d *Docker) Workspace(ctx context.Context, id string) (string, error) {
	name, err := d.ContainerName(id)
	if err != nil {
		return "", err
	}
	if err := d.docker(ctx, "rm", "-f", name); err != nil {
		return "", err
	}
	rec, err := d.ensure(ctx, id)
	if err != nil {
		return "", err
	}
	// The caller runs a container with it next, which autobox does not see end.
	if _, err := d.expose(ctx, id); err != nil {
		return "", err
	}
	return rec.Path, nil
}

// Wrap returns `docker run -i --rm --name <name> --add-host=host.docker.internal:host-gateway
// -v <cwd>:<cwd> -w <cwd> [mounts] [--user] [-e HOME=<home>] [-e NAME...] [run args] <image>
// argv...`. Variable values never appear: docker reads them from its own environment.
func (d *Docker) Wrap(argv []string, o WrapOptions) ([]string, error) {
	if err := checkWrap(argv, o); err != nil {
		return nil, err
	}
	if d.o.Image == "" {
		return nil, fmt.Errorf("%w: the docker kind needs an image to run (--image)", ErrInvalid)
	}
	name, _ := d.ContainerName(o.ID)
	cwd := o.Cwd
	if cwd == "" {
		cwd = filepath.Join(d.projDir, o.ID)
	}
	if strings.Contains(cwd, ":") {
		return nil, fmt.Errorf("%w: cwd %s contains ':'", ErrInvalid, cwd)
	}
	out := []string{d.bin, "run", "-i", "--rm", "--name", name}
	if !d.podman() {
		// Podman names the host host.containers.internal itself, and before 5.0
		// refuses host-gateway.
		out = append(out, "--add-host=host.docker.internal:host-gateway")
	}
	out = append(out, "-v", cwd+":"+cwd, "-w", cwd)
	for _, m := range d.o.Mounts {
		v := m.Source + ":" + m.Target
		if m.ReadOnly {
			v += ":ro"
		}
		out = append(out, "-v", v)
	}
	if d.o.User != "" {
		out = append(out, "--user", d.o.User)
	}
	if d.o.Home != "" {
		out = append(out, "-e", "HOME="+d.o.Home)
	}
	names, err := envNames(d.envs, o.Env)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		out = append(out, "-e", n)
	}
	out = append(out, d.o.RunArgs...)
	out = append(out, d.o.Image)
	return append(out, argv...), nil
}

// Endpoint is the host as the container sees it: host.docker.internal (the --add-host
// entry Wrap adds), which is the host's address on the container's bridge network, so
// a host server must listen there or on every address (0.0.0.0), not on 127.0.0.1
// alone. With the host's network (a run argument --network=host or --network host)
// the container shares the host's loopback, and the endpoint is 127.0.0.1.
func (d *Docker) Endpoint(port int) (string, error) {
	if err := checkPort(port); err != nil {
		return "", err
	}
	if d.HostNetwork() {
		return "http://127.0.0.1:" + strconv.Itoa(port), nil
	}
	if d.podman() {
		return "http://host.containers.internal:" + strconv.Itoa(port), nil
	}
	return "http://host.docker.internal:" + strconv.Itoa(port), nil
}

// podman reports whether the client is Podman's (by its name), which takes docker's
// arguments but names the host itself.
func (d *Docker) podman() bool { return filepath.Base(d.bin) == "podman" }

// HostNetwork reports whether the run arguments give the container the host's network.
func (d *Docker) HostNetwork() bool {
	for i, a := range d.o.RunArgs {
		if a == "--network=host" || a == "--net=host" || ((a == "--network" || a == "--net") && i+1 < len(d.o.RunArgs) && d.o.RunArgs[i+1] == "host") {
			return true
		}
	}
	return false
}

// Stop stops and removes the task's container (`docker stop` with the stop grace, then
// `docker rm -f`), then stops an `autobox task run` of the task.
func (d *Docker) Stop(ctx context.Context, id string) error {
	name, err := d.ContainerName(id)
	if err != nil {
		return err
	}
	if err := d.stopContainer(ctx, name); err != nil {
		return err
	}
	return d.stopRun(ctx, id)
}

// Cleanup stops and removes the task's container (also for a task whose worktree is
// gone: a stray container), stops its `autobox task run`, and removes the worktree; a
// dirty worktree unforced keeps everything, a running container included.
func (d *Docker) Cleanup(ctx context.Context, id string, force bool) (CleanupResult, error) {
	name, err := d.ContainerName(id)
	if err != nil {
		return CleanupResult{}, err
	}
	return d.remove(ctx, id, force, func() error {
		if err := d.stopContainer(ctx, name); err != nil {
			return err
		}
		return d.stopRun(ctx, id)
	})
}

// stopContainer gives the container the stop grace to end, then removes it, whether
// it ran or not (both are no-ops for a container that is gone).
func (d *Docker) stopContainer(ctx context.Context, name string) error {
	if err := d.docker(ctx, "stop", "-t", strconv.Itoa(d.graceSeconds()), name); err != nil {
		return err
	}
	return d.docker(ctx, "rm", "-f", name)
}

// graceSeconds is StopGrace as `docker stop -t` takes it.
func (d *Docker) graceSeconds() int {
	switch g := d.o.StopGrace; {
	case g == 0:
		return int(DefaultStopGrace / time.Second)
	case g < 0:
		return 0
	default:
		return int((g + time.Second - 1) / time.Second)
	}
}

// docker runs the client with the caller's environment (DOCKER_HOST, contexts). A non-zero
// exit is not an error: stop and rm of a container that does not exist fail, and that is
// the common, idempotent case. Only a client that cannot run is an error.
func (d *Docker) docker(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, d.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return fmt.Errorf("%s %s: %w", d.bin, strings.Join(args, " "), err)
	}
	return nil
}

// run, holding the task's run lock, makes the workspace (removing a stale container) and
// runs the wrapped argv, with the worktree's link files pinned until it ends and checked
// after. The lock comes first, so a second run cannot remove the container of a running one.
func (d *Docker) run(ctx context.Context, id string, argv []string, o WrapOptions, s stdio) (int, error) {
	return d.runTracked(ctx, id, argv, o, func() (proc, error) {
		cwd, err := d.Workspace(ctx, id)
		if err != nil {
			return nil, err
		}
		if o.Cwd == "" {
			o.Cwd = cwd
		}
		o.ID = id
		return d.guard(ctx, id, func(record) (proc, error) { return d.start(argv, o, s) })
	})
}

// start runs the wrapped argv with this process's environment plus o.Env's values: docker
// reads the variables Wrap names from there.
func (d *Docker) start(argv []string, o WrapOptions, s stdio) (proc, error) {
	wrapped, err := d.Wrap(argv, o)
	if err != nil {
		return nil, err
	}
	if err := d.mapOwner(o.Cwd); err != nil {
		return nil, err
	}
	pr, err := startHost(wrapped, o.Cwd, withEnv(os.Environ(), o.Env), s)
	if err != nil {
		return nil, err
	}
	return &dockerProc{proc: pr, d: d, name: d.containerName(o.ID)}, nil
}

// dockerProc is the docker client of a task's container. The container is the
// daemon's, not a child of autobox: killing the client leaves it running. So kill
// stops the container itself (docker stop with the stop grace, then rm -f) before it
// ends the client, and wait removes it once the client has exited, however that came.
type dockerProc struct {
	proc
	d    *Docker
	name string
}

func (p *dockerProc) kill() {
	// Not the caller's context: it may be the one cancelled.
	_ = p.d.stopContainer(context.Background(), p.name)
	p.proc.kill()
}

func (p *dockerProc) wait() (int, error) {
	code, err := p.proc.wait()
	if rmErr := p.d.docker(context.Background(), "rm", "-f", p.name); err == nil && rmErr != nil {
		err = rmErr
	}
	return code, err
}
