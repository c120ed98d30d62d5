package task

import (
	"os"
	"strconv"
	"strings"
)

// loopbackOnly reports whether something on this host listens on TCP port and only on
// loopback addresses (127.0.0.0/8, ::1), from /proc/net/tcp and tcp6: a server a
// container cannot reach through host.docker.internal.
func loopbackOnly(port int) bool {
	hexPort := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(hexPort) < 4 {
		hexPort = "0" + hexPort
	}
	listening, loopback := 0, 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st ...; st 0A is LISTEN.
			if len(f) < 4 || f[3] != "0A" {
				continue
			}
			addr, p, ok := strings.Cut(f[1], ":")
			if !ok || p != hexPort {
				continue
			}
			listening++
			// Addresses are in the kernel's byte order: 127.x.x.x reads "..7F"
			// as a little-endian word, ::1 as three zero words and 01000000.
			if (len(addr) == 8 && strings.HasSuffix(addr, "7F")) || addr == "00000000000000000000000001000000" {
				loopback++
			}
		}
	}
	return listening > 0 && listening == loopback
}
