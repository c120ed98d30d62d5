package ceiling

import "testing"

// BenchmarkCheckDefaults is what a call with two mounts pays for the ceiling
// when there is no file: the never-mountable defaults alone.
func BenchmarkCheckDefaults(b *testing.B) {
	c, err := Load(&Flags{File: b.TempDir() + "/policy.json"}, []string{"/var/lib/autobox-state"})
	if err != nil {
		b.Fatal(err)
	}
	r := Request{Mounts: []MountAsk{{Param: "mounts[0].hostPath", Path: "/home/me/proj", Mode: ReadWrite}, {Param: "mounts[1].hostPath", Path: "/data/sets", Mode: ReadOnly}},
		Limits: Limits{TimeoutMs: 1500, MemoryMb: 256, MaxProcesses: 256, MaxWriteMb: 1024}}
	var g Grants
	for i := 0; i < b.N; i++ {
		if es := c.Check(r, &g); len(es) != 0 {
			b.Fatal(es)
		}
	}
}
