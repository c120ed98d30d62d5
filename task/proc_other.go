//go:build !unix

package task

import (
	"fmt"
	"os"
)

func startHost(argv []string, dir string, env []string, s stdio) (proc, error) {
	return nil, fmt.Errorf("%w: process groups on this platform", ErrUnsupported)
}

func signalCode(name string) int { return -1 }

// fileOwner: unknown here.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
