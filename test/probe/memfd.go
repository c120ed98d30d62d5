//go:build linux

package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// memfdHold makes a memfd, writes mb megabytes into it with write(2), never
// mapping it (so no page of it is in the process's resident memory), and holds
// it for ms milliseconds.
func memfdHold(mb, ms int) error {
	fd, err := unix.MemfdCreate("hold", 0)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 1
	}
	for i := 0; i < mb; i++ {
		if _, err := unix.Write(fd, buf); err != nil {
			fmt.Printf("memfd: wrote %d MB: %v\n", i, err)
			return err
		}
	}
	fmt.Println("ok memfd", mb, "MB")
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return nil
}

// sockFill makes unix stream socket pairs until it may open no more files,
// asks each end for the largest send buffer the kernel gives, fills every end
// until the kernel refuses more, and says how much it queued: memory that no
// process's resident memory shows.
func sockFill() error {
	var queued, pairs int64
	chunk := make([]byte, 64<<10)
	for {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			break // EMFILE: the descriptors are the bound
		}
		pairs++
		for _, fd := range fds {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<30)
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<30)
			_ = unix.SetNonblock(fd, true)
			for {
				n, err := unix.Write(fd, chunk)
				if err != nil || n <= 0 {
					break
				}
				queued += int64(n)
			}
		}
	}
	fmt.Printf("ok queued %d bytes in %d pairs\n", queued, pairs)
	return nil
}
