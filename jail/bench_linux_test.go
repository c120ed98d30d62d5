package jail

import (
	"os"
	"sort"
	"testing"
	"time"
)

// BenchmarkStartWait measures Start→Wait of `/bin/echo hi` through the
// launcher (here the test binary, heavier than autobox's own start), fresh
// and from a Pool, sandboxed and unsafe; it reports the median and the 90th
// percentile. Run: go test -run '^$' -bench StartWait ./jail/
func BenchmarkStartWait(b *testing.B) {
	requireJail(b)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	exe := testExe(b)
	pool := NewPool(exe, 2, nil)
	defer pool.Close()
	for _, mode := range []struct {
		name   string
		unsafe bool
		start  func(*Spec) (*Tree, error)
	}{
		{"fresh/sandboxed", false, func(s *Spec) (*Tree, error) { return Start(exe, s, devnull, devnull) }},
		{"fresh/unsafe", true, func(s *Spec) (*Tree, error) { return Start(exe, s, devnull, devnull) }},
		{"pool/sandboxed", false, func(s *Spec) (*Tree, error) { return pool.Start(s, devnull, devnull, 0) }},
		{"pool/unsafe", true, func(s *Spec) (*Tree, error) { return pool.Start(s, devnull, devnull, 0) }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			spec := &Spec{Argv: []string{"/bin/echo", "hi"}, Sandbox: basePolicy(b), Unsafe: mode.unsafe}
			times := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				tree, err := mode.start(spec)
				if err != nil {
					b.Fatal(err)
				}
				res, err := tree.Wait()
				times = append(times, time.Since(t0))
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v, %v", res, err)
				}
				<-tree.reaped // keep launchers from piling up between iterations
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[len(times)*9/10].Microseconds()), "p90-µs")
		})
	}
}
