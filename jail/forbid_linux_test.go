package jail

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

const forbidEnv = "AUTOBOX_JAIL_FORBID_EXEC"

func init() {
	// A separate victim role: ForbidExecAllThreads is process-wide and
	// irreversible, so it runs in a re-executed child.
	if os.Getenv(forbidEnv) == "1" {
		os.Exit(forbidExecMain())
	}
}

func forbidExecMain() int {
	// Threads that exist before the filter: it must reach them too.
	type req struct{ reply chan string }
	var workers []chan req
	for i := 0; i < 4; i++ {
		c := make(chan req)
		workers = append(workers, c)
		go func() {
			runtime.LockOSThread()
			for r := range c {
				r.reply <- forkExecWait("/bin/true", nil)
			}
		}()
	}
	ask := func(c chan req) string { r := req{make(chan string)}; c <- r; return <-r.reply }
	fmt.Printf("before\t%s\n", ask(workers[0]))
	fmt.Printf("forbid\t%s\n", result(ForbidExecAllThreads()))
	for i, c := range workers {
		fmt.Printf("thread%d\t%s\n", i, ask(c))
	}
	fmt.Printf("main\t%s\n", forkExecWait("/bin/true", nil))
	tasks, filtered := 0, 0
	entries, _ := os.ReadDir("/proc/self/task")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		tasks++
		if strings.Contains(string(b), "\nSeccomp:\t2\n") && strings.Contains(string(b), "\nNoNewPrivs:\t1\n") {
			filtered++
		}
	}
	fmt.Printf("tasks\t%d\nfiltered\t%d\n", tasks, filtered)
	return 0
}

func forbidExecChild(t *testing.T) map[string]string {
	cmd := exec.Command(testExe(t))
	cmd.Env = []string{forbidEnv + "=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("victim: %v\n%s", err, out)
	}
	return parseResults(t, string(out), []string{"before", "forbid", "main", "tasks", "filtered"})
}
