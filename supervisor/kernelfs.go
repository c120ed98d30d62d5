package supervisor

import (
	"fmt"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// refuseKernelFSMounts refuses a call with a read-write mount on a kernel
// pseudo-filesystem or holding one (jail.KernelFSWrites; every start checks it
// again), before the other checks of its mounts, so that the refusal names it.
func refuseKernelFSMounts(mounts []policy.Mount) error {
	for i, m := range mounts {
		if !m.Writable {
			continue
		}
		if err := jail.KernelFSWrites([]string{m.Host}); err != nil {
			return fmt.Errorf("mounts[%d]: %w", i, err)
		}
	}
	return nil
}
