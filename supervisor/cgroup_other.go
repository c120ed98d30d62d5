//go:build !linux

package supervisor

// memCgroups: no cgroups here; the RSS watchdog alone enforces memoryMb.
type memCgroups struct{}

func probeCgroups() *memCgroups { return nil }

func (c *memCgroups) create(memoryMb int) (string, func() int, func(), bool) {
	return "", nil, nil, false
}
