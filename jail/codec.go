package jail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

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
// microseconds. TestCodecCoversEveryField fails when a field is added to message,
// policy.Command or policy.Sandbox without a tag here.

// codecVersion is the first byte of every body. The supervisor and a launcher
// are the same binary, but a launcher started from a binary replaced in place
// could be another build: a different version is refused, not misread. Tags
// below are never renumbered or reused; a change of meaning needs a new version.
const codecVersion = 1

// Tags of message.
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

func (e *encoder) message(m *message) {
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

var errShort = errors.New("field runs past the end of the frame")

type decoder struct{ b []byte }

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, errShort
	}
	d.b = d.b[n:]
	return v, nil
}

// bytes returns the next length-prefixed bytes, not copied.
func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, errShort
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b, nil
}

func (d *decoder) str() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

func (d *decoder) strs() ([]string, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) { // every string takes a byte at least
		return nil, errShort
	}
	if n > maxList {
		return nil, fmt.Errorf("list of %d strings, more than %d", n, maxList)
	}
	l := make([]string, n)
	for i := range l {
		if l[i], err = d.str(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (d *decoder) ints() ([]int, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) || n > maxList { // every integer takes a byte at least
		return nil, errShort
	}
	l := make([]int, n)
	for i := range l {
		if l[i], err = d.int(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (d *decoder) int() (int, error) {
	v, err := d.int64()
	return int(v), err
}

func (d *decoder) int64() (int64, error) {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		return 0, errShort
	}
	d.b = d.b[n:]
	return v, nil
}

// fields calls f for each tag until the end; f reads the tag's value from d.
func (d *decoder) fields(what string, f func(tag byte) error) error {
	for len(d.b) > 0 {
		tag := d.b[0]
		d.b = d.b[1:]
		if err := f(tag); err != nil {
			return fmt.Errorf("%s field %d: %w", what, tag, err)
		}
	}
	return nil
}

// nested decodes a length-prefixed list of fields with f.
func (d *decoder) nested(f func(*decoder) error) error {
	b, err := d.bytes()
	if err != nil {
		return err
	}
	return f(&decoder{b: b})
}

func errTag(tag byte) error { return fmt.Errorf("unknown tag %d", tag) }

func (d *decoder) message(m *message) error {
	return d.fields("message", func(tag byte) (err error) {
		switch tag {
		case tagType:
			m.Type, err = d.str()
		case tagSpec:
			m.Spec = new(policy.Command)
			err = d.nested(func(d *decoder) error { return d.command(m.Spec) })
		case tagBase:
			m.Base = new(policy.Sandbox)
			err = d.nested(func(d *decoder) error { return d.sandbox(m.Base) })
		case tagPid:
			m.Pid, err = d.int()
		case tagPrepared:
			m.Prepared = true
		case tagRoot:
			m.PrivateRoot = true
		case tagLookups:
			m.Lookups, err = d.strs()
		case tagUnixRef:
			m.UnixRefused, err = d.strs()
		case tagStdin:
			m.Stdin = true
		case tagTerminal:
			m.Terminal = true
		case tagNproc:
			m.Nproc, err = d.int()
		case tagIPC:
			m.IPC, err = d.int64()
		case tagCode:
			m.Code, err = d.int()
		case tagSignal:
			m.Signal, err = d.str()
		case tagError:
			m.Error, err = d.str()
		case tagKind:
			m.Kind, err = d.str()
		case tagUsage:
			m.Usage = new(policy.Usage)
			err = d.nested(func(d *decoder) error { return d.usage(m.Usage) })
		default:
			err = errTag(tag)
		}
		return err
	})
}

func (d *decoder) command(c *policy.Command) error {
	return d.fields("command", func(tag byte) (err error) {
		switch tag {
		case tagArgv:
			c.Argv, err = d.strs()
		case tagDir:
			c.Dir, err = d.str()
		case tagEnv:
			c.Env, err = d.strs()
		case tagSandbox:
			err = d.nested(func(d *decoder) error { return d.sandbox(&c.Sandbox) })
		case tagUnsafe:
			c.Unsafe = true
		case tagProxySocket:
			c.ProxySocket, err = d.str()
		case tagProxyToken:
			c.ProxyToken, err = d.str()
		case tagLimits:
			c.Limits = new(policy.Limits)
			err = d.nested(func(d *decoder) error { return d.limits(c.Limits) })
		case tagPortsSocket:
			c.PortsSocket, err = d.str()
		case tagPortsToken:
			c.PortsToken, err = d.str()
		case tagListenPorts:
			c.ListenPorts, err = d.ints()
		case tagOfferPorts:
			c.OfferPorts = true
		default:
			err = errTag(tag)
		}
		return err
	})
}

func (d *decoder) limits(l *policy.Limits) error {
	return d.fields("limits", func(tag byte) (err error) {
		var cpu int64
		switch tag {
		case tagProcesses:
			l.Processes, err = d.int()
		case tagWriteBytes:
			l.WriteBytes, err = d.int64()
		case tagCPU:
			cpu, err = d.int64()
			l.CPU = time.Duration(cpu)
		case tagOpenFiles:
			l.OpenFiles, err = d.int()
		default:
			err = errTag(tag)
		}
		return err
	})
}

func (d *decoder) usage(u *policy.Usage) error {
	return d.fields("usage", func(tag byte) (err error) {
		var cpu int64
		switch tag {
		case tagUsageCPU:
			cpu, err = d.int64()
			u.CPU = time.Duration(cpu)
		case tagUsageMaxRSS:
			u.MaxRSS, err = d.int64()
		case tagUsageProcesses:
			u.Processes, err = d.int()
		case tagUsageWritten:
			u.Written, err = d.int64()
		default:
			err = errTag(tag)
		}
		return err
	})
}

func (d *decoder) sandbox(s *policy.Sandbox) error {
	return d.fields("sandbox", func(tag byte) (err error) {
		switch tag {
		case tagReadOnly:
			s.ReadOnly, err = d.strs()
		case tagReadWrite:
			s.ReadWrite, err = d.strs()
		case tagDenyWrite:
			s.DenyWrite, err = d.strs()
		case tagDevices:
			s.Devices, err = d.strs()
		case tagAllowNetwork:
			s.AllowNetwork = true
		case tagAllowExec:
			s.AllowExec = true
		case tagLinks:
			s.Links, err = d.strs()
		case tagHidden:
			s.Hidden, err = d.strs()
		case tagPrivateNet:
			s.PrivateNetwork = true
		case tagProxyPort:
			s.ProxyPort, err = d.int()
		case tagTmp:
			s.Tmp, err = d.str()
		case tagNoFollow:
			s.NoFollow = true
		case tagPlaces:
			var pairs []string
			if pairs, err = d.strs(); err == nil {
				if len(pairs)%2 != 0 {
					return fmt.Errorf("places: %d paths, want pairs", len(pairs))
				}
				s.Places = make([]policy.Place, 0, len(pairs)/2)
				for i := 0; i < len(pairs); i += 2 {
					s.Places = append(s.Places, policy.Place{Host: pairs[i], At: pairs[i+1]})
				}
			}
		default:
			err = errTag(tag)
		}
		return err
	})
}
