package wire

import (
	"encoding/binary"

	"github.com/autobox-dev/autobox/policy"
)

// A frame's body is a list of fields, each a one-byte tag and a value: a string
// (uvarint length, bytes), a list of strings (uvarint count, then strings), an
// integer (varint), a flag (the tag alone: true) or a nested list of fields
// (uvarint length, fields). Zero values are left out; a nil list is left out and
// an empty one is not, so both survive the trip. Unknown tags are errors.
//
// It replaced JSON, whose decoder took ~0.15 ms of every exec_command call in
// the launcher, which has just woken up and whose caches are cold; this takes
// microseconds. TestCodecCoversEveryField fails when a field is added to Message,
// policy.Command or policy.Sandbox without a tag here.

// codecVersion is the first byte of every body. The supervisor and a launcher
// are the same binary, but a launcher started from a binary replaced in place
// could be another build: a different version is refused, not misread. Tags
// below are never renumbered or reused; a change of meaning needs a new version.
const codecVersion = 1

// Tags of Message.
const (
	tagType     = 1
	tagSpec     = 2
	tagBase     = 3
	tagPid      = 4
	tagPrepared = 5
	tagCode     = 6
	tagSignal   = 7
	tagError    = 8
	tagKind     = 9
	tagRoot     = 10
	tagLookups  = 11
	tagUsage    = 12
	tagStdin    = 13
	tagTerminal = 14
	tagNproc    = 15
	tagIPC      = 16
	tagUnixRef  = 17
	tagShmem    = 18
)

// Tags of policy.Command.
const (
	tagArgv    = 1
	tagDir     = 2
	tagEnv     = 3
	tagSandbox = 4
	tagUnsafe  = 5
	// 6 was the cgroup a command joined; pooled launchers join theirs while idle.
	tagProxySocket = 7
	tagProxyToken  = 8
	tagLimits      = 9
	tagPortsSocket = 10
	tagPortsToken  = 11
	tagListenPorts = 12
	tagOfferPorts  = 13
)

// Tags of policy.Limits.
const (
	tagProcesses  = 1
	tagWriteBytes = 2
	tagCPU        = 3
	tagOpenFiles  = 4
)

// Tags of policy.Usage.
const (
	tagUsageCPU       = 1
	tagUsageMaxRSS    = 2
	tagUsageProcesses = 3
	tagUsageWritten   = 4
)

// Tags of policy.Sandbox.
const (
	tagReadOnly     = 1
	tagReadWrite    = 2
	tagDenyWrite    = 3
	tagDevices      = 4
	tagAllowNetwork = 5
	tagAllowExec    = 6
	tagLinks        = 7
	tagPrivateNet   = 8
	tagProxyPort    = 9
	tagTmp          = 10
	tagNoFollow     = 11
	tagHidden       = 12
	tagPlaces       = 13 // pairs: host, at
)

// maxList bounds a list of strings: each costs a string header (16 bytes) for
// as little as one byte of frame, so a hostile frame could otherwise make the
// reader allocate 16 times its size. Commands have at most 4096 arguments.
const maxList = 1 << 16

type encoder struct{ b []byte }

func (e *encoder) str(tag byte, s string) {
	if s != "" {
		e.b = append(e.b, tag)
		e.raw(s)
	}
}

func (e *encoder) raw(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strs(tag byte, l []string) {
	if l == nil {
		return
	}
	e.b = append(e.b, tag)
	e.b = binary.AppendUvarint(e.b, uint64(len(l)))
	for _, s := range l {
		e.raw(s)
	}
}

// ints is a list of integers: its count, then each as a varint.
func (e *encoder) ints(tag byte, l []int) {
	if l == nil {
		return
	}
	e.b = append(e.b, tag)
	e.b = binary.AppendUvarint(e.b, uint64(len(l)))
	for _, v := range l {
		e.b = binary.AppendVarint(e.b, int64(v))
	}
}

func (e *encoder) int(tag byte, v int) {
	if v != 0 {
		e.b = append(e.b, tag)
		e.b = binary.AppendVarint(e.b, int64(v))
	}
}

func (e *encoder) int64(tag byte, v int64) {
	if v != 0 {
		e.b = append(e.b, tag)
		e.b = binary.AppendVarint(e.b, v)
	}
}

func (e *encoder) flag(tag byte, v bool) {
	if v {
		e.b = append(e.b, tag)
	}
}

// nested encodes a list of fields with f, after tag and its length.
func (e *encoder) nested(tag byte, f func(*encoder)) {
	var sub encoder
	f(&sub)
	e.b = append(e.b, tag)
	e.raw(string(sub.b))
}

func (e *encoder) message(m *Message) {
	e.str(tagType, m.Type)
	if m.Spec != nil {
		e.nested(tagSpec, func(e *encoder) { e.command(m.Spec) })
	}
	if m.Base != nil {
		e.nested(tagBase, func(e *encoder) { e.sandbox(m.Base) })
	}
	e.int(tagPid, m.Pid)
	e.flag(tagPrepared, m.Prepared)
	e.flag(tagRoot, m.PrivateRoot)
	e.strs(tagLookups, m.Lookups)
	e.strs(tagUnixRef, m.UnixRefused)
	e.flag(tagStdin, m.Stdin)
	e.flag(tagTerminal, m.Terminal)
	e.int(tagNproc, m.Nproc)
	e.int64(tagIPC, m.IPC)
	e.int64(tagShmem, m.ShmemBase)
	e.int(tagCode, m.Code)
	e.str(tagSignal, m.Signal)
	e.str(tagError, m.Error)
	e.str(tagKind, m.Kind)
	if m.Usage != nil {
		e.nested(tagUsage, func(e *encoder) { e.usage(m.Usage) })
	}
}

func (e *encoder) limits(l *policy.Limits) {
	e.int(tagProcesses, l.Processes)
	e.int64(tagWriteBytes, l.WriteBytes)
	e.int64(tagCPU, int64(l.CPU))
	e.int(tagOpenFiles, l.OpenFiles)
}

func (e *encoder) usage(u *policy.Usage) {
	e.int64(tagUsageCPU, int64(u.CPU))
	e.int64(tagUsageMaxRSS, u.MaxRSS)
	e.int(tagUsageProcesses, u.Processes)
	e.int64(tagUsageWritten, u.Written)
}

func (e *encoder) command(c *policy.Command) {
	e.strs(tagArgv, c.Argv)
	e.str(tagDir, c.Dir)
	e.strs(tagEnv, c.Env)
	e.nested(tagSandbox, func(e *encoder) { e.sandbox(&c.Sandbox) })
	e.flag(tagUnsafe, c.Unsafe)
	e.str(tagProxySocket, c.ProxySocket)
	e.str(tagProxyToken, c.ProxyToken)
	if c.Limits != nil {
		e.nested(tagLimits, func(e *encoder) { e.limits(c.Limits) })
	}
	e.str(tagPortsSocket, c.PortsSocket)
	e.str(tagPortsToken, c.PortsToken)
	e.ints(tagListenPorts, c.ListenPorts)
	e.flag(tagOfferPorts, c.OfferPorts)
}

func (e *encoder) sandbox(s *policy.Sandbox) {
	e.strs(tagReadOnly, s.ReadOnly)
	e.strs(tagReadWrite, s.ReadWrite)
	e.strs(tagDenyWrite, s.DenyWrite)
	e.strs(tagDevices, s.Devices)
	e.flag(tagAllowNetwork, s.AllowNetwork)
	e.flag(tagAllowExec, s.AllowExec)
	e.strs(tagLinks, s.Links)
	e.strs(tagHidden, s.Hidden)
	e.flag(tagPrivateNet, s.PrivateNetwork)
	e.int(tagProxyPort, s.ProxyPort)
	e.str(tagTmp, s.Tmp)
	e.flag(tagNoFollow, s.NoFollow)
	if s.Places != nil {
		pairs := make([]string, 0, 2*len(s.Places))
		for _, p := range s.Places {
			pairs = append(pairs, p.Host, p.At)
		}
		e.strs(tagPlaces, pairs)
	}
}
