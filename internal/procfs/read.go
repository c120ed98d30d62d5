//go:build unix

package procfs

import "syscall"

// Read reads a small /proc file (a status, stat or io file fits one read)
// into buf and returns what it read, nil when unreadable.
func Read(path string, buf []byte) []byte {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}
