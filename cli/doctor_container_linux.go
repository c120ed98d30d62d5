package cli

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail"
)

// containerCheck names the container this process runs in, if any, and the
// docker run flags that give autobox each mode it does not have there.
func containerCheck(r *DoctorReport, iso jail.Isolation) {
	c := jail.InContainer()
	if c.Engine == "" {
		return
	}
	var facts []string
	facts = append(facts, yesNo("seccomp filter", c.Seccomp), yesNo("/proc paths masked", c.MaskedProc))
	if c.AppArmor != "" {
		facts = append(facts, "AppArmor profile "+c.AppArmor)
	}
	detail := c.Describe() + " (" + strings.Join(facts, ", ") + ")"
	profile := "the profile: autobox doctor --docker-seccomp-profile > " + jail.SeccompProfileFile
	userns := "user namespaces (private root, network and pid namespace for every command, which keeps this uid): docker run " + c.UnlockFlags(true)
	switch {
	case iso.UserNamespace || (iso.PidNamespace && iso.PrivateNetwork && c.UnlockFlags(false) == ""):
		r.add("container", statusOK, detail, "it gives autobox the namespaces it needs")
	case iso.PidNamespace && !iso.PrivateNetwork:
		r.add("container", statusInfo, detail, "no network namespace that works without CAP_NET_ADMIN: add --cap-add NET_ADMIN; for a private root as well: "+flagsOr(c.UnlockFlags(false))+"; "+profile)
	case iso.PidNamespace:
		r.add("container", statusInfo, detail, "a private root needs pivot_root, which the default seccomp profile refuses: add "+flagsOr(c.UnlockFlags(false))+"; "+profile)
	default:
		r.add("container", statusInfo, detail, "for "+userns+"; or, as root, --cap-add SYS_ADMIN --cap-add NET_ADMIN "+c.UnlockFlags(false)+"; "+profile)
	}
}

func flagsOr(flags string) string {
	if flags == "" {
		return "nothing more"
	}
	return flags
}

func yesNo(what string, v bool) string {
	if v {
		return what + ": yes"
	}
	return what + ": no"
}

// afterExec corrects what doctor said before the live exec_command call by
// what that call got (isolation, as results give it): a launcher that could
// not build the private root, or make its namespaces, says so only then.
func (r *DoctorReport) afterExec(isolation string) {
	mode, _, _ := strings.Cut(isolation, ",")
	if mode == jail.ModeLandlock && jail.ModeName() == jail.ModeLandlock {
		if c := r.find("mode"); c != nil && !strings.HasPrefix(c.Detail, jail.ModeLandlock) {
			c.Status, c.Detail = statusInfo, jail.ModeLandlock+": the call just made got no namespaces"
			c.Consequence = jail.NoNamespacesWhy()
		}
	}
	if strings.Contains(isolation, "no private root") {
		fix := "the launcher could not build it here"
		if c := jail.InContainer(); c.Engine != "" {
			fix += fmt.Sprintf(" (in the %s, the default seccomp profile refuses pivot_root: start it with %s; autobox doctor --docker-seccomp-profile > %s writes the profile)",
				c.Describe(), flagsOr(c.UnlockFlags(jail.ModeName() == jail.ModeUserNS)), jail.SeccompProfileFile)
		}
		if c := r.find("private root"); c != nil {
			c.Status = statusInfo
			c.Detail = "none: the call just made ran without one, the host's mounts read-only instead: " + fix
			c.Consequence = "a command can stat, list the attributes of and watch paths outside its mounts; Landlock still denies reading and writing them"
		}
	}
}

// find is the check named name, nil if there is none.
func (r *DoctorReport) find(name string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// readsAsOwner says, where it is so, that the watchdog reads the commands'
// write accounting as their owner: a root server without CAP_SYS_PTRACE (root
// in a default container) whose commands run as another uid, which the kernel
// shows those figures to only as them (internal/watchdog's owner_linux.go).
func readsAsOwner() string {
	uid, _, drop := jail.CommandCredential()
	if !drop {
		return ""
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil && data[0].Effective&(1<<unix.CAP_SYS_PTRACE) != 0 {
		return ""
	}
	return fmt.Sprintf(", read as uid %d: this process lacks CAP_SYS_PTRACE", uid)
}
