package jail

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	spec := &Spec{Argv: []string{"/bin/echo", "hi"}, Env: []string{"A=1"}, Unsafe: true}
	msgs := []*message{
		{Type: msgSpec, Spec: spec},
		{Type: msgStarted, Pid: 42},
		{Type: msgExit, Code: -1, Signal: "SIGKILL"},
	}
	for _, m := range msgs {
		if err := writeFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range msgs {
		got, err := readFrame(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
	if _, err := readFrame(&buf); err != io.EOF {
		t.Errorf("at end: %v, want io.EOF", err)
	}

	var huge [4]byte
	binary.BigEndian.PutUint32(huge[:], maxFrame+1)
	if _, err := readFrame(bytes.NewReader(huge[:])); err == nil {
		t.Error("oversized frame accepted")
	}
	var cut bytes.Buffer
	_ = writeFrame(&cut, msgs[1])
	if _, err := readFrame(bytes.NewReader(cut.Bytes()[:cut.Len()-1])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want io.ErrUnexpectedEOF", err)
	}
}
