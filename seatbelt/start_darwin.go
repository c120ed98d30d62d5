package seatbelt

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/autobox-dev/autobox/policy"
)

// Start runs spec.Argv under sandbox-exec with ExecProfile(&spec.Sandbox), in
// a new session (its own process group, no controlling terminal), with stdin
// /dev/null, the given stdout and stderr, and only descriptors 0-2. Without
// sandbox-exec it fails with ErrUnavailable unless spec.Unsafe is set. A
// command that cannot be found is not an error: Wait reports it as a Result
// with Started false.
func Start(spec *Spec, stdout, stderr *os.File) (*Tree, error) {
	if !spec.Unsafe {
		if err := Available(); err != nil {
			return nil, err
		}
	}
	return launch(SandboxExec, spec, stdout, stderr)
}

var (
	availableOnce sync.Once
	availableErr  error
)

// Available reports nil when /usr/bin/sandbox-exec can run commands under
// autobox's exec_command and worker profiles here, else an error wrapping
// ErrUnavailable that names what is missing. The first call runs /usr/bin/true
// under both profiles (so a profile this macOS rejects, or a parent sandbox
// that forbids applying one, fails here, loudly); later calls are free.
func Available() error {
	availableOnce.Do(func() { availableErr = probe() })
	return availableErr
}

func probe() error {
	fi, err := os.Stat(SandboxExec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable file", ErrUnavailable, SandboxExec)
	}
	const probeBin = "/usr/bin/true"
	profile, params := ExecProfile(&policy.Sandbox{AllowExec: true})
	if err := run(Args(profile, params, []string{probeBin})); err != nil {
		return fmt.Errorf("%w: the exec_command profile does not run %s: %w", ErrUnavailable, probeBin, err)
	}
	profile, params = WorkerProfile(probeBin)
	if err := run(Args(profile, params, []string{probeBin})); err != nil {
		return fmt.Errorf("%w: the worker profile does not run %s: %w", ErrUnavailable, probeBin, err)
	}
	return nil
}

func run(argv []string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500]
		}
		return fmt.Errorf("%w (stderr: %q)", err, msg)
	}
	return nil
}
