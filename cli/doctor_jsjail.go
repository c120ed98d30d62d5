package cli

import "github.com/autobox-dev/autobox/supervisor"

// jsJailCheck says whether this host's JS workers run in their jail: where it
// lacks what the jail needs they run without one, which every execute_js
// result says too (its unjailed field).
func (r *DoctorReport) jsJailCheck(s *supervisor.Server) {
	if gap := s.JSWorkerJailGap(); gap != "" {
		r.add("js worker jail", statusMissing, gap, "every execute_js result says so (unjailed)")
		return
	}
	r.add("js worker jail", statusOK, "JS workers run in their jail", "")
}
