package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/autobox-dev/autobox/policy"
)

// Decoding a frame body (the format is described in codec.go): every length
// is checked against what is left of the frame and against maxList, and an
// unknown tag is an error.

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

func (d *decoder) message(m *Message) error {
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
		case tagShmem:
			m.ShmemBase, err = d.int64()
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
