//go:build !darwin && !linux

package seatbelt

import "fmt"

// Tree is a started command; on this platform Start never returns one.
type Tree struct{}

// Pid returns 0: nothing was started.
func (t *Tree) Pid() int { return 0 }

// Wait fails: nothing was started.
func (t *Tree) Wait() (Result, error) { return Result{}, fmt.Errorf("%w", Available()) }

// Kill does nothing: nothing was started.
func (t *Tree) Kill() {}
