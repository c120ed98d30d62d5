package cli

import (
	_ "embed"
	"encoding/json"
	"io"
	"strings"
)

// The seccomp profile for a container autobox runs in. Docker's (and
// Podman's) default profile refuses what autobox's launchers need to give
// commands namespaces: clone and unshare with namespace flags to a process
// without CAP_SYS_ADMIN, pivot_root and the mount calls. seccomp=unconfined
// gives them back and everything else too; this profile is a default-deny
// list of the system calls a container's programs make, with those added
// (dockerprofile.txt says which are left out). autobox's own filter still
// refuses every one of the namespace and mount calls to the commands it runs.
// `autobox doctor --docker-seccomp-profile` prints it; doctor names the file
// in the flags it gives (jail.SeccompProfileFile).

//go:embed dockerprofile.txt
var dockerProfileNames string

// personalities are the personality(2) arguments the profile allows: the
// default, with the flags programs set to query or reset it (as Docker's
// default profile allows), and the query (0xffffffff).
var personalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

type seccompArg struct {
	Index uint   `json:"index"`
	Value uint64 `json:"value"`
	Op    string `json:"op"`
}

type seccompRule struct {
	Names  []string     `json:"names"`
	Action string       `json:"action"`
	Args   []seccompArg `json:"args,omitempty"`
}

type seccompArch struct {
	Architecture     string   `json:"architecture"`
	SubArchitectures []string `json:"subArchitectures"`
}

type seccompProfile struct {
	DefaultAction   string        `json:"defaultAction"`
	DefaultErrnoRet uint          `json:"defaultErrnoRet"`
	ArchMap         []seccompArch `json:"archMap"`
	Syscalls        []seccompRule `json:"syscalls"`
}

// dockerProfile is the profile: every call of dockerprofile.txt allowed,
// personality for personalities alone, the rest EPERM.
func dockerProfile() seccompProfile {
	var names []string
	for _, line := range strings.Split(dockerProfileNames, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	p := seccompProfile{
		DefaultAction:   "SCMP_ACT_ERRNO",
		DefaultErrnoRet: 1, // EPERM
		ArchMap: []seccompArch{
			{Architecture: "SCMP_ARCH_X86_64", SubArchitectures: []string{"SCMP_ARCH_X86", "SCMP_ARCH_X32"}},
			{Architecture: "SCMP_ARCH_AARCH64", SubArchitectures: []string{"SCMP_ARCH_ARM"}},
		},
		Syscalls: []seccompRule{{Names: names, Action: "SCMP_ACT_ALLOW"}},
	}
	for _, v := range personalities {
		p.Syscalls = append(p.Syscalls, seccompRule{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW",
			Args: []seccompArg{{Index: 0, Value: v, Op: "SCMP_CMP_EQ"}}})
	}
	return p
}

// writeDockerProfile prints the profile as `docker run --security-opt
// seccomp=FILE` reads it.
func writeDockerProfile(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(dockerProfile())
}
