package jail

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"sync"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"golang.org/x/sys/unix"
)

// Containers. Run inside a container (a devcontainer, a CI runner, a pod), a
// server gets what the container's runtime leaves it, and the runtime's
// defaults take away what autobox's modes need: Docker's default seccomp
// profile refuses user namespaces (clone and unshare with namespace flags)
// to a process without CAP_SYS_ADMIN and pivot_root to everyone; its masked
// /proc paths (systempaths) keep a user namespace from mounting a /proc of
// its own; without CAP_NET_ADMIN a network namespace's loopback cannot be
// brought up. This file tells which container this process is in and what,
// added to its `docker run`, gives each mode back; doctor and the errors that
// refuse what a mode needs say it.

// Container is what this process can tell of the container it runs in.
type Container struct {
	// Engine is "docker", "podman", "kubernetes" or "container" (some other
	// runtime); "" outside a container.
	Engine string
	// Name is the container's name where the runtime says it (podman), else
	// its hostname (Docker's default hostname is the container id's first 12
	// hex digits).
	Name string
	// Seccomp: a seccomp filter was on this process when it started.
	Seccomp bool
	// AppArmor is the AppArmor profile confining this process, "" for none.
	AppArmor string
	// MaskedProc: /proc has paths masked by mounts over them (Docker's
	// systempaths), which keeps a user namespace from mounting a /proc.
	MaskedProc bool
}

// InContainer reports what this process can tell of its container (probed
// once).
var InContainer = sync.OnceValue(func() Container {
	var c Container
	env := strings.TrimSpace(readSmall("/run/.containerenv"))
	switch {
	case fileExists("/.dockerenv"):
		c.Engine = "docker"
	case fileExists("/run/.containerenv"):
		c.Engine = "podman"
		for _, line := range strings.Split(env, "\n") {
			if v, ok := strings.CutPrefix(line, "name="); ok {
				c.Name = strings.Trim(v, `"`)
			}
		}
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		c.Engine = "kubernetes"
	case os.Getenv("container") != "":
		c.Engine = "container"
	}
	if c.Engine == "" {
		return c
	}
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	status := readSmall("/proc/self/status")
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			c.Seccomp = strings.TrimSpace(v) != "0"
		}
	}
	profile := strings.TrimSpace(readSmall("/proc/self/attr/apparmor/current"))
	if profile == "" {
		profile = strings.TrimSpace(readSmall("/proc/self/attr/current"))
	}
	if profile != "" && profile != "unconfined" {
		c.AppArmor = profile
	}
	c.MaskedProc = procMasked()
	return c
})

// procMasked reports whether a mount sits below /proc (a masked path such as
// /proc/kcore, or /proc/sys bound read-only), as in mountinfo.
func procMasked() bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "id parent major:minor root mountpoint ..."
		fields := bytes.Fields(sc.Bytes())
		if len(fields) > 4 && bytes.HasPrefix(fields[4], []byte("/proc/")) {
			return true
		}
	}
	return false
}

// SeccompProfileFile is the name doctor's flags give the profile that
// `autobox doctor --docker-seccomp-profile` prints; the user saves it there.
const SeccompProfileFile = "autobox-seccomp.json"

// UnlockFlags is what, added to `docker run`, lets this container's
// launchers be made in user namespaces (or, for root with CAP_SYS_ADMIN,
// build their private root): a seccomp profile that allows the namespace and
// mount calls (doctor prints it), unmasked /proc paths where a user namespace
// must mount its own /proc, and no AppArmor profile where one confines the
// container (Docker's denies mount).
func (c Container) UnlockFlags(userns bool) string {
	var flags []string
	if c.Seccomp {
		flags = append(flags, "--security-opt seccomp="+SeccompProfileFile)
	}
	if userns && c.MaskedProc {
		if c.Engine == "podman" {
			flags = append(flags, "--security-opt unmask=ALL")
		} else {
			flags = append(flags, "--security-opt systempaths=unconfined")
		}
	}
	if c.AppArmor != "" {
		flags = append(flags, "--security-opt apparmor=unconfined")
	}
	return strings.Join(flags, " ")
}

// ContainerFix says, in a container, how to run it so that this process's
// launchers get namespaces; "" outside a container or where no flag of its
// runtime would help.
func ContainerFix() string {
	c := InContainer()
	if c.Engine == "" {
		return ""
	}
	flags := c.UnlockFlags(!confine.HasCapSysAdmin())
	if flags == "" {
		return ""
	}
	return "this process runs in the " + c.describe() + "; start the container with " + flags +
		" (`autobox doctor --docker-seccomp-profile > " + SeccompProfileFile + "` writes the profile: the runtime's default with the namespace and mount calls autobox's launchers make; --security-opt seccomp=unconfined also works, allowing everything)"
}

// describe names the container: "Docker container 0123456789ab".
func (c Container) describe() string {
	engine := map[string]string{"docker": "Docker", "podman": "Podman", "kubernetes": "Kubernetes"}[c.Engine]
	if engine == "" {
		engine = "a"
	}
	if c.Name == "" {
		return engine + " container"
	}
	return engine + " container " + c.Name
}

// Describe names the container ("Docker container 0123456789ab"), "" outside one.
func (c Container) Describe() string {
	if c.Engine == "" {
		return ""
	}
	return c.describe()
}

// NoPrivateNetworkWhy says why commands get no network namespace that works
// where launchers do get namespaces ("" where they do): as root, bringing up
// the namespace's loopback and the proxy's forwarder needs CAP_NET_ADMIN.
func NoPrivateNetworkWhy() string {
	if launcherMode() != nsRoot || confine.HasCap(unix.CAP_NET_ADMIN) {
		return ""
	}
	why := "this process holds CAP_SYS_ADMIN but not CAP_NET_ADMIN, which bringing up loopback in a command's network namespace needs"
	if c := InContainer(); c.Engine != "" {
		why += " (the " + c.describe() + " was started with --cap-add SYS_ADMIN alone: add --cap-add NET_ADMIN)"
	}
	return why
}

func readSmall(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 1<<16 {
		return ""
	}
	return string(b)
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
