package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/autobox-dev/autobox/internal/flaghint"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
)

// Network by host: a call's network is off, open (allowNetwork), or its
// allowHosts list, reached through the server's proxy (package proxy) from a
// network of the command's own in which the proxy is all there is (see
// jail's private network). The server's --allow-host list, if any, is every
// call's default and ceiling: a call may narrow it, never widen it, and may
// not open the whole network.

// netChoice is a validated network choice of one call.
type netChoice struct {
	open  bool              // allowNetwork: the whole network
	hosts policy.AllowHosts // not empty: through the proxy, to these only
}

// proxied reports whether the call reaches the network through the proxy.
func (n netChoice) proxied() bool { return !n.hosts.Empty() }

// networkChoice validates a call's allowNetwork and allowHosts against the
// server's default list. confined says the call's code runs in a sandbox that
// must then be confined to the proxy (exec_command; execute_js's fetch is the
// server's own and needs nothing of the host).
func (s *Server) networkChoice(allowNetwork bool, allowHosts []string, confined bool) (netChoice, error) {
	n, err := s.chooseNetwork(allowNetwork, allowHosts)
	if err == nil && confined && n.proxied() {
		err = s.checkHostsSupported()
	}
	return n, err
}

func (s *Server) chooseNetwork(allowNetwork bool, allowHosts []string) (netChoice, error) {
	if allowNetwork && allowHosts != nil {
		return netChoice{}, fmt.Errorf("%w: allowHosts and allowNetwork together: allowNetwork opens the whole network, allowHosts only the hosts it lists; give one", policy.ErrInvalid)
	}
	def := s.defaultHosts
	if allowNetwork {
		if !def.Empty() {
			return netChoice{}, fmt.Errorf("%w: allowNetwork: this server lets calls reach only the hosts of its list (%s: %s); list those a call needs in allowHosts", policy.ErrInvalid, flaghint.Serve(flaghint.AllowHost), strings.Join(def.Entries(), ", "))
		}
		return netChoice{open: true}, nil
	}
	if allowHosts == nil {
		if def.Empty() {
			return netChoice{}, nil
		}
		return netChoice{hosts: def}, nil
	}
	hosts, err := policy.ParseAllowHosts("allowHosts", allowHosts)
	if err != nil {
		return netChoice{}, err
	}
	if !def.Empty() {
		if ok, bad := hosts.Within(def); !ok {
			i := indexOf(allowHosts, bad)
			return netChoice{}, fmt.Errorf("%w: allowHosts[%d] %q: not within the server's list (%s: %s); a call may narrow that list, not widen it", policy.ErrInvalid, i, bad, flaghint.Serve(flaghint.AllowHost), strings.Join(def.Entries(), ", "))
		}
	}
	return netChoice{hosts: hosts}, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// ErrNoPrivateNetwork: allowHosts cannot be enforced on this host.
var ErrNoPrivateNetwork = errors.New("allowHosts cannot be enforced here")

// checkHostsSupported refuses allowHosts where the command cannot be confined to
// the proxy: allowing its port alone would still let it reach any host on that
// port, so autobox does not offer a weaker mode.
func (s *Server) checkHostsSupported() error {
	switch {
	case s.opts.Unsafe:
		return fmt.Errorf("%w: this server runs commands without a sandbox (%s), so nothing confines them to the proxy; use allowNetwork or no network", ErrNoPrivateNetwork, flaghint.Serve(flaghint.UnsafeNoSandbox))
	case runtime.GOOS == "darwin":
		return nil // seatbelt: out to the proxy's port only
	case runtime.GOOS != "linux":
		return fmt.Errorf("%w: network by host is enforced on Linux and macOS only; use allowNetwork or no network", ErrNoPrivateNetwork)
	case !jail.Isolations().PrivateNetwork && jail.NoPrivateNetworkWhy() != "":
		return fmt.Errorf("%w: the command needs a network namespace of its own with loopback up, which this server cannot give it: %s. Until the user changes that (autobox doctor says how), run the command without network; allowNetwork would open the whole network, so ask the user first", ErrNoPrivateNetwork, jail.NoPrivateNetworkWhy())
	case !jail.Isolations().PrivateNetwork:
		return fmt.Errorf("%w: the command needs a network namespace of its own, which this server cannot make: %s. Until the user changes that (autobox doctor says how), run the command without network; allowNetwork would open the whole network, so ask the user first", ErrNoPrivateNetwork, jail.NoNamespacesWhy())
	}
	return nil
}

// proxyFor registers a proxied call with the server's proxy (started on first
// use), its list widened by the hosts the user lets every command reach, and
// ask asking the user about others (nil: none; askreach.go). The caller closes
// the returned call.
func (s *Server) proxyFor(ctx context.Context, n netChoice, ask proxy.Asker) (*proxy.Call, error) {
	s.proxyOnce.Do(func() { s.proxy, s.proxyErr = proxy.New(os.TempDir()) })
	if s.proxyErr != nil {
		return nil, fmt.Errorf("starting the network proxy: %w", s.proxyErr)
	}
	return s.proxy.Register(ctx, s.withReach(n.hosts), ask)
}

// proxySetup connects a proxied command to the proxy: on Linux its launcher
// forwards the proxy port of its private network to the proxy's socket with the
// call's token; elsewhere (macOS) the command reaches the proxy's loopback TCP
// port itself, with the token as credentials in the proxy URLs it is given.
func (s *Server) proxySetup(pc *proxy.Call, cmd *policy.Command) error {
	if runtime.GOOS == "linux" {
		cmd.ProxySocket, cmd.ProxyToken = s.proxy.Socket(), pc.Token()
		cmd.Sandbox.ProxyPort = jail.ProxyPort
		hp := "127.0.0.1:" + strconv.Itoa(jail.ProxyPort)
		cmd.Env = append(cmd.Env, proxy.Env(s.exe, "http://"+hp, "socks5h://"+hp)...)
		return nil
	}
	port, err := s.proxy.ListenTCP()
	if err != nil {
		return fmt.Errorf("starting the network proxy: %w", err)
	}
	cmd.Sandbox.ProxyPort = port
	cmd.Env = append(cmd.Env, proxy.Env(s.exe, pc.URL("http", port), pc.URL("socks5h", port))...)
	return nil
}
