package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	spec := &policy.Command{Argv: []string{"/bin/echo", "hi"}, Env: []string{"A=1"}, Unsafe: true}
	msgs := []*Message{
		{Type: MsgSpec, Spec: spec},
		{Type: MsgStarted, Pid: 42},
		{Type: MsgExit, Code: -1, Signal: "SIGKILL"},
	}
	for _, m := range msgs {
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range msgs {
		got, err := ReadFrame(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
	if _, err := ReadFrame(&buf); err != io.EOF {
		t.Errorf("at end: %v, want io.EOF", err)
	}

	var huge [4]byte
	binary.BigEndian.PutUint32(huge[:], MaxFrame+1)
	if _, err := ReadFrame(bytes.NewReader(huge[:])); err == nil {
		t.Error("oversized frame accepted")
	}
	var cut bytes.Buffer
	_ = WriteFrame(&cut, msgs[1])
	if _, err := ReadFrame(bytes.NewReader(cut.Bytes()[:cut.Len()-1])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
}
