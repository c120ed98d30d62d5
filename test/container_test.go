//go:build linux

package test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// autobox inside a container of a real Docker daemon (docs/containers.md has the table
// these tests keep true). Each script runs in a container of its own, removed after it.

// inContainerScript is what every variant runs: doctor, a command that outlives the
// watchdog's first polls, the write limit with its control (a copy of busybox only
// executable, which hides its writes from a watchdog that does not own its namespace,
// writing 75 MB under --max-write-mb 64, against a readable one writing 3 MB), and
// allowHosts.
const inContainerScript = `
autobox doctor > /tmp/doctor.txt 2>&1; echo "doctor=$?"; cat /tmp/doctor.txt
autobox exec -- sh -c 'sleep 0.3; echo slept'; echo "exec=$?"
autobox exec --json -- true | sed -n 's/.*"isolation":"\([^"]*\)".*/isolation=\1/p'
autobox exec --timeout 30s --max-write-mb 64 -- sh -c 'cp /bin/busybox "$HOME/busybox" && chmod 111 "$HOME/busybox" && "$HOME/busybox" sh -c "for i in 1 2 3; do head -c 25000000 /dev/zero > \"$HOME/f\$i\"; done; sleep 0.3; echo hidden-survived"'; echo "hidden=$?"
autobox exec --timeout 30s --max-write-mb 64 -- sh -c 'cp /bin/busybox "$HOME/busybox" && "$HOME/busybox" sh -c "head -c 3000000 /dev/zero > \"$HOME/f\"; sleep 0.3; echo readable-wrote"'; echo "readable=$?"
autobox exec --allow-host example.invalid -- true; echo "allowhost=$?"
`

// TestContainerDefaultRoot: root in a default container (no namespaces: commands run as
// uid 65534, Landlock and seccomp only). Commands run and are limited, doctor says so
// and names the container and the flags for more, and allowHosts and a mount uid 65534
// cannot reach are refused naming why.
func TestContainerDefaultRoot(t *testing.T) {
	name := containerName(t, "default-root")
	out, code := dockerRun(t, name, nil, inContainerScript+`
mkdir -p /root/src && echo hi > /root/src/a
autobox exec --mount /root/src:/mnt/src -- cat /mnt/src/a; echo "rootmount=$?"
mkdir -p /srv/src && echo hi > /srv/src/a && chmod 755 /srv/src
autobox exec --mount /srv/src:/mnt/src -- cat /mnt/src/a; echo "srvmount=$?"
autobox exec --mount /srv/src:/mnt/src:rw -- sh -c 'echo x > /mnt/src/b'; echo "srvrw=$?"
mkdir -p /root/proj && echo one > /root/proj/a.txt
id=$(autobox ws create --copy-mode auto /root/proj /mnt/ws 2>/dev/null)
autobox exec --workspace "$id" -- sh -c 'echo two > /mnt/ws/a.txt && echo new > /mnt/ws/b.txt && id -u'; echo "wsexec=$?"
autobox ws status "$id"; echo "wsstatus=$?"
autobox ws sync "$id" >/dev/null; echo "wssync=$?"; cat /root/proj/a.txt /root/proj/b.txt
id=$(autobox ws create --copy-mode auto --storage /root/ws /root/proj /mnt/ws 2>/dev/null)
autobox exec --workspace "$id" -- true; echo "wsroot=$?"
`)
	if code != 0 {
		t.Fatalf("container exited %d:\n%s", code, out)
	}
	want(t, "default container as root", out,
		"doctor=0", "landlock-only", "commands run as uid 65534",
		"read as uid 65534: this process lacks CAP_SYS_PTRACE", // which limits hold, and how
		"user namespaces   refused to this process",            // never "available" when refused
		"container         Docker container", "--security-opt seccomp=autobox-seccomp.json --security-opt systempaths=unconfined",
		"slept\nexec=0", "isolation=landlock-only",
		"runs a program its user cannot read", "hidden=153", // the hidden writer is ended
		"readable-wrote\nreadable=0", // and a readable command is not
		"--allow-host cannot be enforced here", "To allow them: this process runs in the Docker container", "allowhost=125",
		// /root is 0700: uid 65534 cannot reach a mount below it; the call says so.
		"uid 65534 cannot reach /root/src: /root (mode 0700, owner uid 0) refuses it", "rootmount=125",
		"hi\nsrvmount=0", // the positive control: a mount it can reach
		"uid 65534 cannot write /srv/src", "srvrw=125",
		// Workspaces are given to uid 65534, in storage it can reach; one whose
		// storage is below /root is refused, naming why.
		"65534\nwsexec=0", "b.txt", "wsstatus=0", "wssync=0", "two\nnew\n",
		"storage is out of its reach", "wsroot=125")
	if strings.Contains(out, "hidden-survived") {
		t.Errorf("the execute-only shell ran to its end:\n%s", out)
	}
}

// TestContainerUser: a default container run as an ordinary user: no namespaces either,
// commands keep the user's uid, and workspaces work (create, a command that writes in
// one, status sees the change, sync writes it back).
func TestContainerUser(t *testing.T) {
	name := containerName(t, "user")
	out, code := dockerRun(t, name, []string{"--user", "1000:1000", "-e", "HOME=/home/u"}, inContainerScript+`
mkdir -p /home/u/src && echo one > /home/u/src/a.txt
id=$(autobox ws create --copy-mode auto /home/u/src /mnt/src 2>/dev/null)
echo "ws=$id"
autobox exec --workspace "$id" -- sh -c 'echo two > /mnt/src/a.txt'; echo "wsexec=$?"
autobox ws status "$id"; echo "status=$?"
autobox ws sync "$id"; echo "sync=$?"
cat /home/u/src/a.txt
`)
	if code != 0 {
		t.Fatalf("container exited %d:\n%s", code, out)
	}
	want(t, "default container as uid 1000", out, "doctor=0", "landlock-only", "slept\nexec=0", "runs a program its user cannot read", "hidden=153", "readable=0", "allowhost=125",
		"wsexec=0", "a.txt", "status=0", "sync=0", "\ntwo\n")
}

// TestContainerUnconfined: the two ways to give a container's autobox user namespaces:
// the seccomp profile doctor prints (tested here by running a container with it), and
// seccomp unconfined; both with the /proc paths unmasked. Root then gets user namespaces
// (its uid mapped to itself): a private root, a pid and a network namespace per command,
// and allowHosts works.
func TestContainerUnconfined(t *testing.T) {
	profile, err := exec.Command(bin, "doctor", "--docker-seccomp-profile").Output()
	if err != nil {
		t.Fatalf("doctor --docker-seccomp-profile: %v", err)
	}
	file := writeTemp(t, "autobox-seccomp.json", profile)
	os.Chmod(file, 0o644)
	for what, opt := range map[string]string{"profile": "seccomp=" + file, "unconfined": "seccomp=unconfined"} {
		t.Run(what, func(t *testing.T) {
			name := containerName(t, "userns-"+what)
			out, code := dockerRun(t, name, []string{"--security-opt", opt, "--security-opt", "systempaths=unconfined"}, inContainerScript)
			if code != 0 {
				t.Fatalf("container exited %d:\n%s", code, out)
			}
			want(t, what, out, "doctor=0", "user-namespaces: each launcher", "container         Docker container",
				"slept\nexec=0", "isolation=user-namespaces", "hidden=153", "readable=0", "allowhost=0")
		})
	}
	// The control: without the profile (Docker's default) the same container has none.
	out, _ := dockerRun(t, containerName(t, "userns-control"), []string{"--security-opt", "systempaths=unconfined"}, "autobox exec --json -- true")
	want(t, "default seccomp profile", out, `"isolation":"landlock-only"`)
}

// TestContainerSysAdminOnly: root with CAP_SYS_ADMIN alone gets namespaces, but Docker's
// default seccomp profile refuses pivot_root (no private root) and without CAP_NET_ADMIN
// a network namespace's loopback stays down: doctor says both, and allowHosts is refused
// naming CAP_NET_ADMIN rather than failing inside the call.
func TestContainerSysAdminOnly(t *testing.T) {
	out, code := dockerRun(t, containerName(t, "sysadmin"), []string{"--cap-add", "SYS_ADMIN"}, inContainerScript)
	if code != 0 {
		t.Fatalf("container exited %d:\n%s", code, out)
	}
	want(t, "--cap-add SYS_ADMIN", out, "doctor=0", "isolation=namespaces, no private root",
		"private root      none: the call just made ran without one", "refuses pivot_root",
		"network by host   none: this process holds CAP_SYS_ADMIN but not CAP_NET_ADMIN", "add --cap-add NET_ADMIN",
		"slept\nexec=0", "hidden=153", "readable=0", "but not CAP_NET_ADMIN", "allowhost=125")
	out, code = dockerRun(t, containerName(t, "sysadmin-netadmin"), []string{"--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN"}, "autobox exec --allow-host example.invalid -- true; echo allowhost=$?")
	want(t, "--cap-add SYS_ADMIN --cap-add NET_ADMIN", out, "allowhost=0")
}
