// Package exactjson decodes JSON that comes from outside autobox with its
// object keys matched exactly.
//
// Go's encoding/json matches a key to a struct field case-insensitively, with
// Unicode folding besides: "allowNetworK" (U+212A KELVIN SIGN) fills
// allowNetwork, "mountſ" (U+017F LONG S) fills mounts, and of "mounts": [] and
// "MOUNTS": [...] in one object the later wins. Whoever reads the same JSON
// with exact keys (an MCP client's permission hook, a person, JavaScript's
// JSON.parse) sees no grant where autobox would make one. So before decoding,
// a pass over the raw text walks it alongside the Go type and refuses, naming
// the key and where it is:
//
//   - a key that is not exactly one of the object's fields (KeyUnknown), or
//     that matches one only by folding case (KeyCase, with the field it would
//     have filled);
//   - a key that appears twice in one object (KeyDuplicate), in any object,
//     maps and untyped values included.
//
// Values are left to encoding/json: a wrong type is its error. Fields whose
// type decodes itself (json.Unmarshaler, json.RawMessage) and untyped values
// (any) are checked for repeated keys only.
package exactjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Why says what is wrong with a key.
type Why int

const (
	// KeyUnknown: the object has no such field.
	KeyUnknown Why = iota + 1
	// KeyCase: the key matches a field only when case is folded.
	KeyCase
	// KeyDuplicate: the key appears more than once in the object.
	KeyDuplicate
)

// KeyError is a key refused by Check.
type KeyError struct {
	// Path is where the object is, in the JSON's own terms: "" for the top
	// level, "mounts[1]", "limits".
	Path string
	// Key is the key as written (decoded from its JSON string).
	Key string
	Why Why
	// Field is, for KeyCase, the field the key would have filled.
	Field string
	// Fields are the object's field names (for KeyUnknown and KeyCase).
	Fields []string
}

// Error says what is wrong, in the JSON's terms; callers with words of their
// own (a tool's parameters) build their message from the fields.
func (e *KeyError) Error() string {
	where := ""
	if e.Path != "" {
		where = e.Path + ": "
	}
	switch e.Why {
	case KeyCase:
		return fmt.Sprintf("%skey %q is not %q: keys match exactly, in case too", where, e.Key, e.Field)
	case KeyDuplicate:
		return fmt.Sprintf("%skey %q appears more than once", where, e.Key)
	}
	if len(e.Fields) == 0 {
		return fmt.Sprintf("%sunknown key %q", where, e.Key)
	}
	return fmt.Sprintf("%sunknown key %q (the keys are %s)", where, e.Key, strings.Join(e.Fields, ", "))
}

// Unmarshal is json.Unmarshal after Check against v's type.
func Unmarshal(data []byte, v any) error {
	if err := Check(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Decode decodes exactly one JSON value from data into v, with exact keys and
// nothing after the value (blank space aside).
func Decode(data []byte, v any) error {
	if err := Check(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // Check refused them already; kept as a second lock
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value")
	}
	return nil
}

// Check walks the JSON value data alongside t (nil: any value) and returns a
// *KeyError for the first key that is not exactly a field of its object, or
// that repeats one; nil if there is none. Malformed JSON is left to the
// decoder that follows: Check returns nil where it stops understanding it.
func Check(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	err := walk(dec, t, "")
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke
	}
	return nil
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

// shape is what Check knows of a type: nil for a value it does not look into.
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType || t.Kind() == reflect.Interface {
		return nil
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// walk reads one value from dec.
func walk(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	t = shape(t)
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walk(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ]
		return err
	}
	return nil
}

// walkObject reads the members of an object whose { was read.
func walkObject(dec *json.Decoder, t reflect.Type, path string) error {
	var fields *fieldSet
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return errors.New("not a key")
		}
		if seen[key] {
			return &KeyError{Path: path, Key: key, Why: KeyDuplicate}
		}
		seen[key] = true
		vt := elem
		if fields != nil {
			f, ok := fields.byName[key]
			if !ok {
				e := &KeyError{Path: path, Key: key, Why: KeyUnknown, Fields: fields.names}
				for _, n := range fields.names {
					if strings.EqualFold(n, key) {
						e.Why, e.Field = KeyCase, n
						break
					}
				}
				return e
			}
			vt = f
		}
		if err := walk(dec, vt, joinKey(path, key)); err != nil {
			return err
		}
	}
	_, err := dec.Token() // }
	return err
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldSet is a struct's JSON fields as encoding/json finds them: by tag name
// or Go name, those of embedded structs promoted.
type fieldSet struct {
	byName map[string]reflect.Type
	names  []string // sorted
}

var fieldCache sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fieldSet)
	}
	fs := &fieldSet{byName: map[string]reflect.Type{}}
	addFields(fs, t, map[reflect.Type]bool{})
	for n := range fs.byName {
		fs.names = append(fs.names, n)
	}
	sort.Strings(fs.names)
	fieldCache.Store(t, fs)
	return fs
}

func addFields(fs *fieldSet, t reflect.Type, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	// A struct's own fields first: they hide those promoted from embedded ones.
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fs.byName[name]; !dup {
			fs.byName[name] = f.Type
		}
	}
	for _, et := range embedded {
		addFields(fs, et, visiting)
	}
}
