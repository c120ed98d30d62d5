//go:build !linux

package cli

// afterExec: nothing to correct where there are no namespaces.
func (r *DoctorReport) afterExec(string) {}
