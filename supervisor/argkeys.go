package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/autobox-dev/autobox/internal/exactjson"
)

// Argument keys match exactly (package exactjson): a model that writes
// "allowNetworK" (U+212A) or "MOUNTS" beside "mounts" would otherwise have
// encoding/json fill the parameter while the client's permission hook, and
// the person reading the call, see no such grant. A key that only folds to a
// parameter, or one given twice, is refused naming it; an unknown key keeps
// the decoder's path (findMistake), which lists the tool's parameters.

// keyMistake says what is wrong with the keys of a call's arguments raw,
// decoded into t, in the tool's terms; "" if nothing (an unknown key is left
// to findMistake).
func keyMistake(tool string, raw json.RawMessage, t reflect.Type) string {
	var ke *exactjson.KeyError
	if !errors.As(exactjson.Check(raw, t), &ke) {
		return ""
	}
	where, what := "", "parameter of "+tool
	if ke.Path != "" {
		where, what = ke.Path+": ", "field"
	}
	switch ke.Why {
	case exactjson.KeyCase:
		return fmt.Sprintf("%s%q is not a %s: names match exactly, in case too (did you mean %q?)", where, ke.Key, what, ke.Field)
	case exactjson.KeyDuplicate:
		return fmt.Sprintf("%s%q is given more than once: give each once", where, ke.Key)
	}
	return ""
}
