package supervisor

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/ceiling"
)

// TestRoundTripDirectAnswersAsTheSDK: on MCP 2026-07-28, the stdio transport's
// direct path answers as the SDK does: a complete result and a call that asks
// the user (input_required, then the retry, which is always the SDK's), for a
// client that declares elicitation and one that does not.
func TestRoundTripDirectAnswersAsTheSDK(t *testing.T) {
	meta := func(elicit bool) string {
		caps := `{}`
		if elicit {
			caps = `{"elicitation":{}}`
		}
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	state := regexp.MustCompile(`"requestState":"[^"]*"`)
	policy := t.TempDir() + "/policy.json"
	run := func(noDirect bool) ([]string, int64) {
		ss := startStdioWith(t, Options{noDirect: noDirect, Ceiling: &ceiling.Flags{File: policy, Limits: ceiling.Limits{TimeoutMs: 100}}})
		var replies []string
		exchange := func(line string) string {
			ss.Send(line)
			reply := durations.ReplaceAllString(ss.Next(), "$1:0")
			// The same members, in whatever order.
			var v any
			if err := json.Unmarshal([]byte(state.ReplaceAllString(reply, `"requestState":"S"`)), &v); err != nil {
				t.Fatalf("%v: %s", err, reply)
			}
			norm, _ := json.Marshal(v)
			replies = append(replies, string(norm))
			return reply
		}
		exchange(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta(true) + `}}`)
		exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7"},` + meta(true) + `}}`)
		asked := exchange(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7","timeoutMs":200},` + meta(true) + `}}`)
		var m struct {
			Result struct{ RequestState string } `json:"result"`
		}
		if json.Unmarshal([]byte(asked), &m) != nil || m.Result.RequestState == "" {
			t.Fatalf("no question: %s", asked)
		}
		exchange(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7","timeoutMs":200},` + meta(true) +
			`,"requestState":"` + m.Result.RequestState + `","inputResponses":{"ask":{"action":"accept","content":{"answer":"once"}}}}}`)
		exchange(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7","timeoutMs":200},` + meta(false) + `}}`)
		return replies, ss.directAnswered()
	}
	// Three calls take the direct path: the retry is always the SDK's.
	direct := sameOnBothPaths(t, run, 3)
	for i, want := range []string{`"supportedVersions"`, `"resultType":"complete"`, `"resultType":"input_required"`, `"result":42`, `only an MCP client that supports elicitation`} {
		if !strings.Contains(direct[i], want) {
			t.Errorf("reply %d without %s: %s", i, want, direct[i])
		}
	}
}
