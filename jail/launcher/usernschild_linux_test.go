package launcher

import (
	"os"
	"testing"
)

// ownTasks (num_threads of /proc/self/stat) counts what /proc/self/task lists
// (read before and after: the runtime may start a thread meanwhile).
func TestOwnTasks(t *testing.T) {
	count := func() int {
		names, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	before := count()
	n, err := ownTasks()
	after := count()
	if err != nil || n < min(before, after) || n > max(before, after) {
		t.Fatalf("ownTasks = %d, %v; /proc/self/task listed %d before and %d after", n, err, before, after)
	}
}
