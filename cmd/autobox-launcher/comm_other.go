//go:build !linux

package main

// nameAfterArgv0: launchers are a Linux matter.
func nameAfterArgv0([]string) {}
