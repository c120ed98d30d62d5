package procfs

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRunning: a process that runs is running; one that has exited but is
// not yet reaped (a zombie) is not, nor is one reaped, nor a pid nobody has.
func TestRunning(t *testing.T) {
	if !Running(os.Getpid()) {
		t.Fatal("this process is not running")
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	if !Running(sleep.Process.Pid) {
		t.Error("a sleeping child is not running")
	}
	done := exec.Command("true")
	if err := done.Start(); err != nil {
		t.Fatal(err)
	}
	pid := done.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); !zombie(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie")
		}
	}
	if Running(pid) {
		t.Error("an unreaped child that exited is running")
	}
	done.Wait()
	if Running(pid) {
		t.Error("a reaped child is running")
	}
	if Running(1 << 30) {
		t.Error("a pid beyond pid_max is running")
	}
}
