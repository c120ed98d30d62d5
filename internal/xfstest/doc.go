// Package xfstest gives store tests real filesystems: a loop-mounted XFS image with
// reflink (copy-on-write clones), a tmpfs (no clones), and a FIEMAP reader that shows
// whether a file's blocks are shared with another file. Off Linux every helper returns
// ErrUnavailable, and the tests that need them skip.
package xfstest

import "errors"

// ErrUnavailable means this machine cannot make the filesystem (not Linux, not root, no
// mkfs.xfs, no loop devices); tests skip with the wrapped reason.
var ErrUnavailable = errors.New("test filesystem unavailable")
