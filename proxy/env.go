package proxy

import (
	"net/url"
	"strings"
)

// Env points a sandboxed command's tools at the proxy, at httpURL and
// socksURL: the variables curl, wget, git, pip, npm, yarn, Go, Python, Java and
// Node read, and git over ssh through autobox's own connect helper (exe). No DNS is offered inside, so SOCKS
// clients are told to resolve at the proxy (socks5h).
func Env(exe, httpURL, socksURL string) []string {
	u, _ := url.Parse(httpURL)
	host, port := u.Hostname(), u.Port()
	env := []string{
		"NO_PROXY=", "no_proxy=",
		"npm_config_proxy=" + httpURL, "npm_config_https_proxy=" + httpURL,
		"PIP_PROXY=" + httpURL,
		"YARN_HTTP_PROXY=" + httpURL, "YARN_HTTPS_PROXY=" + httpURL,
		"NODE_USE_ENV_PROXY=1",
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=" + host + " -Dhttp.proxyPort=" + port +
			" -Dhttps.proxyHost=" + host + " -Dhttps.proxyPort=" + port,
		"GIT_SSH_COMMAND=ssh -o ProxyCommand='" + exe + " worker connect %h %p'",
	}
	for _, kv := range [][2]string{{"HTTP_PROXY", httpURL}, {"HTTPS_PROXY", httpURL}, {"ALL_PROXY", socksURL}} {
		env = append(env, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
	}
	return env
}
