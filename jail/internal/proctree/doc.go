// Package proctree finds and kills the processes below a process by reading
// /proc: what both sides of the jail kill, a launcher its command's
// descendants, the server a launcher's when the launcher died without
// reporting. Linux only.
package proctree
