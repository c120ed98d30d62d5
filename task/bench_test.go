package task

import (
	"context"
	"testing"
)

// BenchmarkWorkspaceReuse is the idempotent path an orchestrator takes before every run.
func BenchmarkWorkspaceReuse(b *testing.B) {
	root, tasks := newRepo(b), tasksDir(b)
	w, err := NewWorktree(&Options{Project: root, TasksDir: tasks})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := w.Workspace(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.Workspace(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNativeRunTrue is `autobox task run --kind native -- /bin/true` minus the process
// start of the wrapper: workspace check, policy preparation, launcher, sandbox, exit.
func BenchmarkNativeRunTrue(b *testing.B) {
	root, tasks := newRepo(b), tasksDir(b)
	n, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		code, err := n.run(ctx, "bench", []string{"/bin/true"}, WrapOptions{}, stdio{})
		if err != nil || code != 0 {
			b.Fatalf("run: %d, %v", code, err)
		}
	}
}
