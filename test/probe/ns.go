//go:build linux

package main

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// loopback listens on 127.0.0.1, connects to itself and passes a byte: what
// a test suite's own server and its client do inside one call.
func loopback() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "x" {
		return fmt.Errorf("read %q: %v", b, err)
	}
	fmt.Println("ok loopback")
	return nil
}

// forkMany starts up to n children that sleep, then reports how many
// started and how the first refused one failed; every child is killed.
func forkMany(n int) error {
	var kids []*exec.Cmd
	var first error
	for range n {
		c := exec.Command("/bin/sleep", "30")
		if err := c.Start(); err != nil {
			first = err
			break
		}
		kids = append(kids, c)
	}
	for _, c := range kids {
		c.Process.Kill()
		c.Wait()
	}
	fmt.Printf("started %d; refused: %v\n", len(kids), first)
	return nil
}

// shm makes (create) or looks up (find) the System V segment of key.
func shm(how string, key int) error {
	flags := 0
	if how == "create" {
		flags = unix.IPC_CREAT | 0o600
	}
	id, err := unix.SysvShmGet(key, 4096, flags)
	if err != nil {
		return err
	}
	fmt.Println("ok segment", id)
	return nil
}

// prlimitOf reads (does not change) the RLIMIT_NOFILE of pid through prlimit(2).
func prlimitOf(pid int) error {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		return err
	}
	fmt.Println("ok prlimit", old.Cur)
	return nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// undumpable makes the probe not dumpable (PR_SET_DUMPABLE 0), which would
// hide its /proc files from a watchdog of the same user.
func undumpable(v int) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(v), 0, 0, 0); err != nil {
		return err
	}
	fmt.Println("ok dumpable", v)
	return nil
}
