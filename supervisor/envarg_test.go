package supervisor

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestEnvForms: exec_command's env as a list and as an object mean the same,
// in the order written; what neither form takes (a name given twice in the
// object included) is refused naming env.
func TestEnvForms(t *testing.T) {
	for _, c := range []struct {
		args string
		want []string
		err  string
	}{
		{`{"command": ["env"], "env": ["CI=1", "A=b=c"]}`, []string{"CI=1", "A=b=c"}, ""},
		{`{"command": ["env"], "env": {"CI": "1", "A": "b=c"}}`, []string{"CI=1", "A=b=c"}, ""},
		// Keys of JSON from outside match exactly and are given once (exactjson).
		{`{"command": ["env"], "env": {"Z": "1", "A": "2", "Z": "3"}}`, nil, `invalid arguments: env: "Z" is given more than once`},
		{`{"command": ["env"], "env": {"N": 3, "F": 1.5, "B": true}}`, []string{"N=3", "F=1.5", "B=true"}, ""},
		{`{"command": ["env"], "env": {}}`, []string{}, ""},
		{`{"command": ["env"], "env": {"A": null}}`, nil, "invalid arguments: env: A: want a string, got null"},
		{`{"command": ["env"], "env": {"A": ["x"]}}`, nil, "invalid arguments: env: A: want a string, got array"},
		{`{"command": ["env"], "env": {"A=B": "x"}}`, nil, `invalid arguments: env: "A=B" is not a variable name`},
		{`{"command": ["env"], "env": "CI=1"}`, nil, "invalid arguments: env: want an array of \"NAME=VALUE\" strings or an object {\"NAME\": \"VALUE\"}, got string"},
		{`{"command": ["env"], "env": [1]}`, nil, "invalid arguments: env: want an array of \"NAME=VALUE\" strings or an object"},
	} {
		var in ExecInput
		err := DecodeArgs("exec_command", json.RawMessage(c.args), &in)
		switch {
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("%s: got %v, want an error starting %q", c.args, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.args, err)
		case c.err == "" && !slices.Equal(in.Env, c.want):
			t.Errorf("%s: env %q, want %q", c.args, in.Env, c.want)
		}
	}
	// Both forms give one environment, whatever else the call says.
	var list, obj ExecInput
	if DecodeArgs("exec_command", json.RawMessage(`{"command": ["env"], "env": ["CI=1", "PATH=/x:$PATH"]}`), &list) != nil ||
		DecodeArgs("exec_command", json.RawMessage(`{"command": ["env"], "env": {"CI": "1", "PATH": "/x:$PATH"}}`), &obj) != nil {
		t.Fatal("decoding")
	}
	a, errA := validateEnv(list.Env, nil)
	b, errB := validateEnv(obj.Env, nil)
	if errA != nil || errB != nil || !slices.Equal(a, b) {
		t.Errorf("list %q %v, object %q %v", a, errA, b, errB)
	}
}
