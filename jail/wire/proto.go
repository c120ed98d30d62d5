package wire

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/autobox-dev/autobox/policy"
)

// Message types, in Message.Type.
const (
	MsgPrepare    = "prepare"
	MsgPrepared   = "prepared"
	MsgSpec       = "spec"
	MsgStarted    = "started"
	MsgSpawnError = "spawn_error"
	MsgError      = "error"
	MsgExit       = "exit"
	// MsgIPC tells, while the command runs, the memory its IPC namespace's
	// System V objects hold (IPC; see the launcher's IPC watch).
	MsgIPC = "ipc"
	// MsgSignal asks a running launcher to signal its command's process group
	// (Signal names the signal: SIGINT, SIGTERM or SIGKILL).
	MsgSignal = "signal"

	// KindSandbox marks an error frame from a failed restriction of the
	// command's thread.
	KindSandbox = "sandbox"

	// MaxFrame bounds a frame so a corrupt length cannot make either side
	// allocate gigabytes; a spec is argv + env + paths.
	MaxFrame = 8 << 20
)

// Message is one frame's content; which fields a type uses is said at each.
type Message struct {
	Type string
	Spec *policy.Command
	// Base is the policy a prepare frame asks the launcher to prepare for.
	Base *policy.Sandbox
	Pid  int
	// Prepared says in a started frame that the command's Landlock ruleset was
	// the one prepared ahead (see the launcher's prepare).
	Prepared bool
	// PrivateRoot says in a started frame that the command's root holds only
	// its policy's paths (a private root).
	PrivateRoot bool
	// Nproc is, in a started frame, the RLIMIT_NPROC the launcher set on
	// itself and its command, 0 if none.
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
	// ShmemBase is, in a started frame, the tmpfs bytes the launcher's memory
	// cgroup held right before the command was forked (what the launcher
	// placed in the command's root), plus one; 0 where it was not read
	// (MemStatEnv).
	ShmemBase int64
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

// EncodeFrame returns m as one frame: its length and its body.
func EncodeFrame(m *Message) ([]byte, error) {
	e := encoder{b: make([]byte, 4, 512)}
	e.b = append(e.b, codecVersion)
	e.message(m)
	n := len(e.b) - 4
	if n > MaxFrame {
		return nil, fmt.Errorf("%s frame of %d bytes exceeds %d", m.Type, n, MaxFrame)
	}
	binary.BigEndian.PutUint32(e.b, uint32(n))
	return e.b, nil
}

// WriteFrame writes m to w as one frame, in one write.
func WriteFrame(w io.Writer, m *Message) error {
	frame, err := EncodeFrame(m)
	if err != nil {
		return err
	}
	// One write, so a frame smaller than PIPE_BUF reaches the reader whole.
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("writing %s frame: %w", m.Type, err)
	}
	return nil
}

// ReadFrame returns io.EOF only at a clean frame boundary.
func ReadFrame(r io.Reader) (*Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, MaxFrame)
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
	var m Message
	d := decoder{b: body[1:]}
	if err := d.message(&m); err != nil {
		return nil, fmt.Errorf("decoding frame: %w", err)
	}
	return &m, nil
}
