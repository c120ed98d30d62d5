//go:build !unix

package task

import "fmt"

func startHost(argv []string, dir string, env []string, s stdio) (proc, error) {
	return nil, fmt.Errorf("%w: process groups on this platform", ErrUnsupported)
}

func signalCode(name string) int { return -1 }
