package seccomp

var x86Only = map[string]uint32{}
