package jail

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/autobox-dev/autobox/policy"
)

// The supervisor and the launcher (`autobox worker exec`) talk over two
// inherited descriptors, in frames of a 4-byte big-endian length and a message
// of tagged fields (codec.go; the JS worker's frames are JSON). The
// launcher may be started long before its command (Pool), so the command's
// stdout and stderr travel with the spec as SCM_RIGHTS on a unix socket:
//
//	supervisor (Tree)                             launcher (launch)
//	  spawn: fork+exec, fds 0-2 /dev/null,         fds >= 3 close-on-exec; subreaper;
//	  in a new pid namespace where it can          main thread M (never restricted)
//	                                               starts the command thread C
//	  Pool: ctl socket ── {prepare, base} ───────▶ C: private root with base's paths
//	                                               (root only), Landlock ruleset with
//	                                               base's rules, bounding set emptied
//	  status pipe (fd 4) ◀── {prepared} ─────────── C: done preparing, waits for the spec
//	  ctl socket (fd 3) ── {spec} + [out, err] ──▶ C: the spec's paths into the root,
//	    (a session: {spec, stdin[, terminal]}      seal it; resolve argv[0]; restrict
//	     + [in, out, err])                         C; fork+exec command (own pgrp,
//	                                               fds 0=/dev/null,1=out,2=err; or
//	                                               0=in; a terminal: own session,
//	                                               in as controlling tty)
//	  status pipe        ◀── {started, pid} ────── ...or {spawn_error} / {error}, exit;
//	                                               C exits, M: OOM score -1000, reap
//	        ...command runs, writes straight into out and err...
//	  status pipe        ◀── {ipc, bytes} ──────── when its System V memory changes
//	                                               (in an IPC namespace of its own)
//	  Signal: ctl ── {signal, SIGINT} ───────────▶ kill(-command's pgrp), while the
//	                                               command is not reaped
//	  Kill: close ctl    ── EOF ─────────────────▶ kill request (also SIGTERM/INT/HUP,
//	                                               EOF when the supervisor dies, and
//	                                               any frame but a signal)
//	                                               command exited or kill requested:
//	                                               SIGKILL every descendant, reap,
//	                                               repeat until it has no children
//	                     ◀── {exit, code, signal}  exit(0)
//	  Pool.Close: close ctl before any spec ─────▶ exit(0) quietly
//
// After {exit}, {spawn_error} or {error} the launcher has no children left,
// so Wait returns at once and the launcher is reaped in the background. If
// the status pipe closes without one of them, the supervisor sweeps the tree
// itself (see Tree.Kill).
const (
	msgPrepare    = "prepare"
	msgPrepared   = "prepared"
	msgSpec       = "spec"
	msgStarted    = "started"
	msgSpawnError = "spawn_error"
	msgError      = "error"
	msgExit       = "exit"
	// msgIPC tells, while the command runs, the memory its IPC namespace's
	// System V objects hold (IPC; see ipcwatch_linux.go).
	msgIPC = "ipc"
	// msgSignal asks a running launcher to signal its command's process group
	// (Signal names the signal: one of signalable).
	msgSignal = "signal"

	// errKindSandbox marks an error frame from a failed RestrictThread.
	errKindSandbox = "sandbox"

	// maxFrame bounds a frame so a corrupt length cannot make either side
	// allocate gigabytes; a spec is argv + env + paths.
	maxFrame = 8 << 20
)

type message struct {
	Type string
	Spec *Spec
	// Base is the policy a prepare frame asks the launcher to prepare for.
	Base *policy.Sandbox
	Pid  int
	// Prepared says in a started frame that the command's Landlock ruleset was
	// the one prepared ahead (see prepared).
	Prepared bool
	// PrivateRoot says in a started frame that the command's root holds only
	// its policy's paths (see privateRoot).
	PrivateRoot bool
	// Nproc is, in a started frame, the RLIMIT_NPROC the launcher set on
	// itself and its command (see applyNproc), 0 if none.
	Nproc int
	// Lookups, in an exit frame, are the names the command tried to resolve
	// itself in its private network.
	Lookups []string
	// UnixRefused, in an exit frame, are the unix sockets (paths, or
	// @abstract names) the command's connects to were refused: not its own.
	UnixRefused []string
	Code        int
	Signal      string
	Error       string
	Kind        string
	// IPC is, in an ipc frame, the bytes the System V objects of the
	// command's IPC namespace hold.
	IPC int64
	// Usage is, in an exit frame, what the kernel accounted of the reaped tree.
	Usage *policy.Usage

	// Stdin says in a spec frame that three descriptors came with it: the
	// command's stdin, stdout and stderr (else two, and stdin is /dev/null).
	Stdin bool
	// Terminal says in a spec frame that stdin is a terminal (a pseudo-
	// terminal's slave): the command gets a session of its own, with it as
	// its controlling terminal.
	Terminal bool
}

func encodeFrame(m *message) ([]byte, error) {
	e := encoder{b: make([]byte, 4, 512)}
	e.b = append(e.b, codecVersion)
	e.message(m)
	n := len(e.b) - 4
	if n > maxFrame {
		return nil, fmt.Errorf("%s frame of %d bytes exceeds %d", m.Type, n, maxFrame)
	}
	binary.BigEndian.PutUint32(e.b, uint32(n))
	return e.b, nil
}

func writeFrame(w io.Writer, m *message) error {
	frame, err := encodeFrame(m)
	if err != nil {
		return err
	}
	// One write, so a frame smaller than PIPE_BUF reaches the reader whole.
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("writing %s frame: %w", m.Type, err)
	}
	return nil
}

// readFrame returns io.EOF only at a clean frame boundary.
func readFrame(r io.Reader) (*message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading frame body: %w", err)
	}
	if len(body) == 0 || body[0] != codecVersion {
		return nil, fmt.Errorf("frame is not of codec version %d (another build of autobox?)", codecVersion)
	}
	var m message
	d := decoder{b: body[1:]}
	if err := d.message(&m); err != nil {
		return nil, fmt.Errorf("decoding frame: %w", err)
	}
	return &m, nil
}
