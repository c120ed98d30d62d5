package wire

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

// fill sets every field of the struct v points to to a value that is not its
// zero value, recursing into structs and pointers to structs.
func fill(t *testing.T, v reflect.Value, seed *int) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		*seed++
		switch f.Kind() {
		case reflect.String:
			f.SetString(strings.Repeat("é", *seed%3) + "v" + string(rune('a'+*seed%26)))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(-*seed * 1000))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.Int {
				f.Set(reflect.ValueOf([]int{0, -*seed, 65535}))
				break
			}
			if f.Type().Elem().Kind() == reflect.Struct {
				f.Set(reflect.MakeSlice(f.Type(), 2, 2))
				for j := 0; j < 2; j++ {
					fill(t, f.Index(j), seed)
				}
				break
			}
			f.Set(reflect.ValueOf([]string{"", "a b", strings.Repeat("x", 300)}))
		case reflect.Struct:
			fill(t, f, seed)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			fill(t, f.Elem(), seed)
		default:
			t.Fatalf("%s.%s: the codec test does not know kind %s", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

func roundTrip(t *testing.T, m *Message) *Message {
	t.Helper()
	frame, err := EncodeFrame(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadFrame(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCodecCoversEveryField sets every field of a message, its spec (with its
// sandbox) and its base: a field added to any of them without a tag in codec.go
// does not survive the trip, and this fails.
func TestCodecCoversEveryField(t *testing.T) {
	var m Message
	seed := 0
	fill(t, reflect.ValueOf(&m).Elem(), &seed)
	if got := roundTrip(t, &m); !reflect.DeepEqual(got, &m) {
		t.Errorf("round trip changed the message:\n got %+v\nwant %+v", got, &m)
	}
}

func TestCodecKeepsNilAndEmptyApart(t *testing.T) {
	m := &Message{Type: MsgSpec, Spec: &policy.Command{Argv: []string{"true"}, Env: []string{}}}
	got := roundTrip(t, m)
	if got.Spec.Env == nil || len(got.Spec.Env) != 0 || got.Spec.Sandbox.ReadOnly != nil {
		t.Errorf("Env %#v, ReadOnly %#v: want an empty list and nil", got.Spec.Env, got.Spec.Sandbox.ReadOnly)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("got %+v, want %+v", got, m)
	}
	base := &Message{Type: MsgPrepare, Base: &policy.Sandbox{}}
	if got := roundTrip(t, base); !reflect.DeepEqual(got, base) {
		t.Errorf("got %+v, want %+v", got, base)
	}
}

func TestCodecRefusesBadBodies(t *testing.T) {
	frame, err := EncodeFrame(&Message{Type: MsgSpec, Spec: &policy.Command{Argv: []string{"/bin/echo", "hi"}, Sandbox: policy.Sandbox{ReadOnly: []string{"/usr"}}}})
	if err != nil {
		t.Fatal(err)
	}
	body := frame[4:]
	// Every cut of the body either decodes as a shorter message or fails; none
	// panics. Cuts inside a field fail.
	for n := 1; n < len(body); n++ {
		var m Message
		d := decoder{b: append([]byte(nil), body[:n]...)}
		_ = d.message(&m)
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"unknown tag", []byte{99}, "unknown tag 99"},
		{"unknown nested tag", []byte{tagSpec, 1, 99}, "unknown tag 99"},
		{"string past the end", []byte{tagType, 5, 'a'}, "past the end"},
		{"list longer than the frame", []byte{tagSpec, 3, tagArgv, 0xff, 0x7f}, "past the end"},
		{"nested past the end", []byte{tagSpec, 9, tagUnsafe}, "past the end"},
		{"no varint", []byte{tagPid}, "past the end"},
		{"list too long", func() []byte {
			list := binary.AppendUvarint([]byte{tagArgv}, maxList+1)
			list = append(list, make([]byte, maxList+1)...) // that many empty strings
			return append(binary.AppendUvarint([]byte{tagSpec}, uint64(len(list))), list...)
		}(), "more than 65536"},
	} {
		var m Message
		d := decoder{b: tc.body}
		if err := d.message(&m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestCodecRefusesOtherVersions(t *testing.T) {
	frame, err := EncodeFrame(&Message{Type: MsgExit})
	if err != nil {
		t.Fatal(err)
	}
	frame[4] = codecVersion + 1
	if _, err := ReadFrame(bytes.NewReader(frame)); err == nil || !strings.Contains(err.Error(), "codec version") {
		t.Errorf("a frame of another version: %v, want it refused", err)
	}
}

func FuzzDecode(f *testing.F) {
	frame, _ := EncodeFrame(&Message{Type: MsgExit, Code: -1, Signal: "SIGKILL", Spec: &policy.Command{Argv: []string{"a"}}})
	f.Add(frame[4:])
	f.Fuzz(func(t *testing.T, body []byte) {
		var m Message
		d := decoder{b: body}
		if d.message(&m) != nil {
			return
		}
		// What decodes, encodes back to a frame that decodes to the same.
		if got := roundTrip(t, &m); !reflect.DeepEqual(got, &m) {
			t.Errorf("re-encoded %+v as %+v", &m, got)
		}
	})
}
