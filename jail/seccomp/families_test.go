package seccomp

import (
	"fmt"
	"testing"
)

// TestSocketFamilies (issue 20 item 10): with a private network (allowHosts)
// socket(2) is allowed for the families a network namespace confines alone;
// vsock, which reaches the hypervisor past any namespace, is refused in
// every mode, the whole network included. The kernel reads the family as
// an int, so high bits change nothing.
func TestSocketFamilies(t *testing.T) {
	const (
		afPacket, afRDS, afCAN, afTIPC, afBluetooth = 17, 21, 29, 30, 31
		afALG, afKCM, afQIPCRTR, afXDP, afMCTP      = 38, 41, 42, 44, 45
	)
	outside := []uint64{AFVsock, 1<<32 | AFVsock}
	others := []uint64{afPacket, afRDS, afCAN, afTIPC, afBluetooth, afALG, afKCM, afQIPCRTR, afXDP, afMCTP, 0, 46, 0xffff}
	confined := []uint64{AFUnix, AFInet, AFInet6, AFNetlink, 1<<32 | AFInet}
	for _, a := range []*Arch{AMD64, ARM64} {
		for _, c := range []struct {
			name                          string
			o                             Options
			confined, others, unix, inets uint32
		}{
			{"allowHosts", Options{AllowNetwork: true, PrivateNetwork: true}, allow, eafnosupport, allow, allow},
			{"allowNetwork", Options{AllowNetwork: true}, allow, allow, allow, allow},
			{"off, loopback", Options{Loopback: true}, 0, eafnosupport, eperm, allow},
			{"off", Options{StreamPairsOnly: true}, 0, eafnosupport, eperm, eafnosupport},
			{"private network ignored without network", Options{PrivateNetwork: true}, 0, eafnosupport, eperm, eafnosupport},
		} {
			t.Run(fmt.Sprintf("%s/%s", a.Name, c.name), func(t *testing.T) {
				raw, err := Sandbox(a, c.o)
				if err != nil {
					t.Fatal(err)
				}
				var calls []call
				for _, fam := range outside {
					calls = append(calls, call{name: "socket", args: []uint64{fam, 1}, want: eafnosupport})
				}
				for _, fam := range others {
					calls = append(calls, call{name: "socket", args: []uint64{fam, 1}, want: c.others})
				}
				if c.confined != 0 {
					for _, fam := range confined {
						calls = append(calls, call{name: "socket", args: []uint64{fam, 1}, want: c.confined})
					}
				}
				calls = append(calls,
					call{name: "socket", args: []uint64{AFUnix, 1}, want: c.unix},
					call{name: "socket", args: []uint64{AFInet, 1}, want: c.inets},
					call{name: "socket", args: []uint64{AFInet6, 2}, want: c.inets})
				run(t, raw, a, calls)
			})
		}
	}
}
