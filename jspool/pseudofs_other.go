//go:build !linux

package jspool

import "os"

// pseudoFS: only Linux is known to put the server's own process in a
// filesystem (/proc); macOS has no procfs, and its devfs serves only
// devices, which the bridge refuses by type.
func pseudoFS(*os.File) string { return "" }

func pseudoFSAt(string) string { return "" }
