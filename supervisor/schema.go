package supervisor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/store"
)

// The tools' schemas are inferred from their input and output types (the `jsonschema`
// tags are the descriptions) and finished here, so that the strictest clients take
// them: the TypeScript SDK's client, inside Claude Desktop, Claude Code, Cursor and the
// Inspector, refuses a whole tools/list over one boolean schema, and validates every
// result's structured content against its tool's output schema.
//
//   - Where inference gives the empty schema (an `any` field), which encodes as the
//     boolean schema `true`, a described schema of every JSON type is used instead.
//   - An input parameter has one type: a null there means "not given" to the
//     decoder, but a form shows a single type.
//   - Defaults, bounds and enums come from the same values validation uses (the
//     intParam variables below and policy's constants), and are repeated at the end
//     of the description for clients that show only that.

// intParam is an integer parameter with a default and bounds. Validation (bounded)
// and the input schema both read it, so the two cannot disagree.
type intParam struct {
	name          string
	def, min, max int64
}

var (
	jsTimeoutMs   = intParam{"timeoutMs", policy.JSDefaultTimeoutMs, 1, policy.JSMaxTimeoutMs}
	jsMemoryMb    = intParam{"memoryMb", policy.JSDefaultMemoryMb, policy.JSMinMemoryMb, policy.JSMaxMemoryMb}
	maxReadBytes  = intParam{"maxReadBytes", policy.DefaultMaxBridgeBytes, 0, policy.MaxBridgeBytes}
	maxWriteBytes = intParam{"maxWriteBytes", policy.DefaultMaxBridgeBytes, 0, policy.MaxBridgeBytes}
	execTimeoutMs = intParam{"timeoutMs", policy.ExecDefaultTimeoutMs, 1, policy.ExecMaxTimeoutMs}
	execMemoryMb  = intParam{"memoryMb", policy.ExecDefaultMemoryMb, policy.ExecMinMemoryMb, policy.ExecMaxMemoryMb}
)

// bounded returns the parameter's value, its default when v is nil, or the error
// naming the parameter when v is out of bounds.
func bounded[T int | int64](p intParam, v *T) (T, error) {
	if v == nil {
		return T(p.def), nil
	}
	if int64(*v) < p.min || int64(*v) > p.max {
		return 0, fmt.Errorf("%w: %s must be between %d and %d, got %d", policy.ErrInvalid, p.name, p.min, p.max, *v)
	}
	return *v, nil
}

// A rule finishes one property of an input schema.
type rule func(*jsonschema.Schema)

func (p intParam) rule() rule {
	return func(s *jsonschema.Schema) {
		lo, hi := float64(p.min), float64(p.max)
		s.Minimum, s.Maximum = &lo, &hi
		s.Default = mustJSON(p.def)
		s.Description += fmt.Sprintf(" (default %d; %d-%d)", p.def, p.min, p.max)
	}
}

// bounds states a parameter's bounds, for one that has no default (its absence
// means something of its own).
func (p intParam) bounds() rule {
	return func(s *jsonschema.Schema) {
		lo, hi := float64(p.min), float64(p.max)
		s.Minimum, s.Maximum = &lo, &hi
		s.Description += fmt.Sprintf(" (%d-%d)", p.min, p.max)
	}
}

// sessionRule is the rule of a parameter whose bounds and default differ in a
// session (exec_command with yieldMs): the schema takes the wider bounds.
func (p intParam) sessionRule(session intParam) rule {
	return func(s *jsonschema.Schema) {
		lo, hi := float64(min(p.min, session.min)), float64(max(p.max, session.max))
		s.Minimum, s.Maximum = &lo, &hi
		s.Default = mustJSON(p.def)
		s.Description += fmt.Sprintf(" (default %d; %d-%d; with yieldMs, a session: default %d, up to %d)", p.def, p.min, p.max, session.def, session.max)
	}
}

// byDefault states the value an absent parameter takes.
func byDefault(v any) rule {
	return func(s *jsonschema.Schema) {
		s.Default = mustJSON(v)
		if b, ok := v.(bool); ok {
			s.Description += fmt.Sprintf(" (default %v)", b)
		}
	}
}

// choices lists the values a string parameter takes (enum); the first is the
// default, unless the parameter is required.
func choices(required bool, values ...string) rule {
	return func(s *jsonschema.Schema) {
		for _, v := range values {
			s.Enum = append(s.Enum, v)
		}
		if !required {
			s.Default = mustJSON(values[0])
		}
	}
}

func items(lo, hi int) rule {
	return func(s *jsonschema.Schema) {
		if lo > 0 {
			s.MinItems = &lo
		}
		s.MaxItems = &hi
	}
}

func minLength(n int) rule {
	return func(s *jsonschema.Schema) { s.MinLength = &n }
}

// inputRules are the rules of each tool's input schema, by property path: a name,
// or name/items/name for a property of a list's objects.
var inputRules = map[string]map[string][]rule{
	"execute_js": withMounts(map[string][]rule{
		"code":          {minLength(1)},
		"timeoutMs":     {jsTimeoutMs.rule()},
		"memoryMb":      {jsMemoryMb.rule()},
		"allowNetwork":  {byDefault(false)},
		"maxReadBytes":  {maxReadBytes.rule()},
		"maxWriteBytes": {maxWriteBytes.rule()},
	}),
	"exec_command": withMounts(limitRules(map[string][]rule{
		"command":      {items(1, maxArgs)},
		"caches/items": {choices(true, "npm", "pip", "go", "cargo")},
		"env":          {items(0, maxEnvVars)},
		"timeoutMs":    {execTimeoutMs.sessionRule(sessionTimeoutMs)},
		"memoryMb":     {execMemoryMb.rule()},
		"allowNetwork": {byDefault(false)},
		"yieldMs":      {execYieldMs.bounds()},
		"tty":          {byDefault(false)},
		"rows":         {ttyRows.rule()},
		"cols":         {ttyCols.rule()},
	})),
	"exec_session": {
		"action":     {choices(true, sessionActions...)},
		"signal":     {choices(false, sessionSignals...)},
		"yieldMs":    {sessionYieldMs.rule()},
		"closeStdin": {byDefault(false)},
	},
	"copy_then_sync": {
		"action":         {choices(true, "create", "status", "sync", "resolve", "merge", "discard")},
		"diff":           {byDefault(false)},
		"includeIgnored": {byDefault(false)},
		"copyMode":       {choices(false, store.CopyModeAuto, store.CopyModeClone)},
		"excludes":       {byDefault([]string{})},
	},
}

// withMounts adds the rules of the mounts and allowHosts parameters, which both
// runners take.
func withMounts(rules map[string][]rule) map[string][]rule {
	rules["allowHosts"] = []rule{items(0, policy.MaxAllowHosts)}
	rules["mounts"] = []rule{byDefault([]any{}), items(0, policy.MaxMounts)}
	rules["mounts/items/mode"] = []rule{choices(false, "ro", "rw")}
	return rules
}

// anyJSON is the schema of a value that may be any JSON value: every type, named,
// each in a branch of its own.
var anyJSON = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
	{Type: "null"}, {Type: "boolean"}, {Type: "number"}, {Type: "string"}, {Type: "array"}, {Type: "object"},
}}

// toolSchemas infers and finishes a tool's input and output schemas. It panics on a
// schema that breaks the rules above: that is a programming error, which every test
// that starts a server finds.
func toolSchemas[In, Out any](tool string) (in, out *jsonschema.Schema) {
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[any](): anyJSON}}
	in, err := jsonschema.For[In](opts)
	if err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", tool, err))
	}
	out, err = jsonschema.For[Out](opts)
	if err != nil {
		panic(fmt.Sprintf("output schema of %s: %v", tool, err))
	}
	oneType(in)
	nullable(out)
	for path, rules := range inputRules[tool] {
		p := property(in, path)
		if p == nil {
			panic(fmt.Sprintf("input schema of %s: no property %s", tool, path))
		}
		for _, r := range rules {
			r(p)
		}
	}
	if err := checkInput(in, tool); err != nil {
		panic(err.Error())
	}
	return in, out
}

// oneType drops "null" from the types of every property below s.
func oneType(s *jsonschema.Schema) {
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		oneType(p)
	}
	if s.Items != nil {
		oneType(s.Items)
	}
}

// nullable spells the types of an output schema's properties as they are sent: a list
// is always a list, an optional property is left out rather than null, and a value
// that may be null says so with a branch per type ({"anyOf": [{"type": "null"},
// {"type": "integer"}]}), which clients that map schemas onto a dialect of single
// types take, where a list of types is refused.
func nullable(s *jsonschema.Schema) {
	for name, p := range s.Properties {
		if len(p.Types) == 2 && p.Types[0] == "null" {
			typ := p.Types[1]
			p.Types = nil
			if typ == "array" || typ == "object" || !slices.Contains(s.Required, name) {
				p.Type = typ
			} else {
				p.AnyOf = []*jsonschema.Schema{{Type: "null"}, {Type: typ}}
			}
		}
		nullable(p)
	}
	if s.Items != nil {
		nullable(s.Items)
	}
}

// property finds a property by its path (name, or name/items/name).
func property(s *jsonschema.Schema, path string) *jsonschema.Schema {
	for _, part := range strings.Split(path, "/") {
		if s == nil {
			return nil
		}
		if part == "items" {
			s = s.Items
		} else {
			s = s.Properties[part]
		}
	}
	return s
}

// checkInput holds an input schema to what form-building clients need: every
// property described, every object closed.
func checkInput(s *jsonschema.Schema, where string) error {
	if s.Type == "object" && (s.AdditionalProperties == nil || !reflect.DeepEqual(s.AdditionalProperties, &jsonschema.Schema{Not: &jsonschema.Schema{}})) {
		return fmt.Errorf("input schema %s: an object that allows unknown properties", where)
	}
	for name, p := range s.Properties {
		if p.Description == "" {
			return fmt.Errorf("input schema %s: property %s has no description", where, name)
		}
		if err := checkInput(p, where+"."+name); err != nil {
			return err
		}
	}
	if s.Items != nil {
		return checkInput(s.Items, where+"[]")
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
