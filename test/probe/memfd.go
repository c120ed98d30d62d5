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
