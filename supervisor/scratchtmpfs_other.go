//go:build !linux

package supervisor

import "errors"

// privateDirOn: scratch dirs stay in the temp dir off Linux.
func privateDirOn(base string) (string, error) { return "", errors.New("not Linux") }

func tmpfsRoom(dir string) bool { return false }

func ownDir(dir string) bool { return false }
