package supervisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// EnvList is exec_command's env as models write it: a list of "NAME=VALUE"
// strings, or an object of names and values ({"CI": "1"}), the form MCP client
// configs use. Both mean the same: the object's members become NAME=VALUE
// entries in the order written (a name given twice keeps its last value, as in
// the list), its values strings, numbers or booleans as written. It decodes to
// the list form, which the rest of the call sees alone.
type EnvList []string

// UnmarshalJSON takes either form. Its errors name the mistake in the
// parameter's terms; the decoder's caller puts "env" before them.
func (e *EnvList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '[':
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("want an array of \"NAME=VALUE\" strings or an object {\"NAME\": \"VALUE\"}: %s", describeJSONError(err))
		}
		*e = list
		return nil
	case b[0] != '{':
		return fmt.Errorf("want an array of \"NAME=VALUE\" strings or an object {\"NAME\": \"VALUE\"}, got %s", jsonValueKind(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	list := []string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if name == "" || strings.ContainsRune(name, '=') {
			return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
		}
		var value string
		switch v := v.(type) {
		case string:
			value = v
		case json.Number:
			value = v.String()
		case bool:
			value = fmt.Sprint(v)
		default:
			return fmt.Errorf("%s: want a string, got %s", name, jsonValueName(v))
		}
		list = append(list, name+"="+value)
	}
	if _, err := dec.Token(); err != nil && err != io.EOF { // }
		return err
	}
	*e = list
	return nil
}

// jsonValueName names the kind of a decoded JSON value that is not a scalar.
func jsonValueName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
