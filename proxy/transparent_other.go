//go:build !linux

package proxy

import "golang.org/x/sys/unix"

// serveTransparent: there is no transparent path without a Linux launcher;
// the descriptors are not expected here, and closed.
func (c *Call) serveTransparent(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// redirectListener: none without the transparent path.
type redirectListener struct{}

func (c *Call) drainRedirects([]*redirectListener) {}
