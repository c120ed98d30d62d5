package exactjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type mount struct {
	HostPath string `json:"hostPath"`
	Mode     string `json:"mode,omitempty"`
}

type inner struct {
	Shared string `json:"shared"`
	Deep   string `json:"deep"`
}

type args struct {
	inner
	Shared       int               `json:"shared"` // hides inner's
	AllowNetwork bool              `json:"allowNetwork,omitempty"`
	Mounts       []mount           `json:"mounts,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Raw          json.RawMessage   `json:"raw,omitempty"`
	Any          any               `json:"any,omitempty"`
	Ptr          *mount            `json:"ptr,omitempty"`
	Untagged     string
	Skipped      string `json:"-"`
	hidden       string
}

// TestCheck: every key that encoding/json would take by folding case, and
// every repeated key, is refused with where it is; exact keys pass, and
// encoding/json itself takes the refused ones (the control that shows what
// the check stops).
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in   string
		path string
		key  string
		why  Why
		want string // the field, for KeyCase
	}{
		{in: `{"allowNetwor\u212a": true}`, key: "allowNetwor\u212a", why: KeyCase, want: "allowNetwork"},
		{in: `{"mount\u017f": [{"hostPath": "/"}]}`, key: "mountſ", why: KeyCase, want: "mounts"},
		{in: `{"mounts": [], "MOUNTS": [{"hostPath": "/"}]}`, key: "MOUNTS", why: KeyCase, want: "mounts"},
		{in: `{"mounts": [], "mounts": [{"hostPath": "/"}]}`, key: "mounts", why: KeyDuplicate},
		{in: `{"mounts": [{"hostPath": "/a"}, {"hostPath": "/b", "Mode": "rw"}]}`, path: "mounts[1]", key: "Mode", why: KeyCase, want: "mode"},
		{in: `{"mounts": [{"hostPath": "/a", "hostPath": "/b"}]}`, path: "mounts[0]", key: "hostPath", why: KeyDuplicate},
		{in: `{"ptr": {"HOSTPATH": "/"}}`, path: "ptr", key: "HOSTPATH", why: KeyCase, want: "hostPath"},
		{in: `{"env": {"A": "1", "A": "2"}}`, path: "env", key: "A", why: KeyDuplicate},
		{in: `{"any": {"x": {"y": 1, "y": 2}}}`, path: "any.x", key: "y", why: KeyDuplicate},
		{in: `{"raw": {"k": 1, "k": 2}}`, path: "raw", key: "k", why: KeyDuplicate},
		{in: `{"nope": 1}`, key: "nope", why: KeyUnknown},
		{in: `{"untagged": "x"}`, key: "untagged", why: KeyCase, want: "Untagged"},
		{in: `{"Skipped": "x"}`, key: "Skipped", why: KeyUnknown},
		{in: `{"hidden": "x"}`, key: "hidden", why: KeyUnknown},
		{in: `{"DEEP": "x"}`, key: "DEEP", why: KeyCase, want: "deep"},
	} {
		err := Check([]byte(tc.in), reflect.TypeFor[*args]())
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Path != tc.path || ke.Key != tc.key || ke.Why != tc.why || ke.Field != tc.want {
			t.Errorf("%s: got %#v", tc.in, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: the message does not name the key: %v", tc.in, err)
		}
		// What the check stops: encoding/json (without unknown fields) takes
		// every case variant and repeated key.
		if tc.why != KeyUnknown {
			dec := json.NewDecoder(strings.NewReader(tc.in))
			dec.DisallowUnknownFields()
			var v args
			if err := dec.Decode(&v); err != nil {
				t.Errorf("%s: encoding/json refuses it too (%v): not a case the check is needed for", tc.in, err)
			}
		}
	}
	// Exact keys pass, at every depth; escapes in keys are the key's text.
	for _, in := range []string{
		`{}`, `null`, `[]`, `"x"`,
		`{"allowNetwork": true, "mounts": [{"hostPath": "/a", "mode": "rw"}], "env": {"A": "1", "a": "2"}, "raw": {"K": 1, "k": 2}, "any": [{"x": 1}, {"x": 2}], "ptr": null, "Untagged": "u", "shared": 1, "deep": "d"}`,
		`{"allow\u004eetwork": true}`,
	} {
		if err := Check([]byte(in), reflect.TypeFor[args]()); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	// Malformed JSON is the decoder's to report.
	if err := Check([]byte(`{"mounts": [`), reflect.TypeFor[args]()); err != nil {
		t.Errorf("malformed: %v", err)
	}
}

func TestDecode(t *testing.T) {
	var v args
	if err := Decode([]byte(` {"allowNetwork": true, "shared": 3} `), &v); err != nil || !v.AllowNetwork || v.Shared != 3 {
		t.Errorf("exact: %v %+v", err, v)
	}
	if err := Decode([]byte(`{"allowNetwork": true} {}`), &v); err == nil {
		t.Error("two values: no error")
	}
	var ke *KeyError
	if err := Decode([]byte(`{"ALLOWNETWORK": true}`), &v); !errors.As(err, &ke) {
		t.Errorf("a case variant: %v", err)
	}
	if err := Unmarshal([]byte(`{"a": 1, "a": 2}`), &map[string]int{}); !errors.As(err, &ke) || ke.Why != KeyDuplicate {
		t.Errorf("a repeated map key: %v", err)
	}
	if err := Decode([]byte(`{"allowNetwork": "yes"}`), &v); err == nil || errors.As(err, &ke) {
		t.Errorf("a wrong type is the decoder's error: %v", err)
	}
}
