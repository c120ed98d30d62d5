package proto

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzRead: any byte stream decodes to a message or an error; never a panic, never an
// allocation beyond MaxFrame, and a decoded message re-encodes to a frame that decodes
// the same way.
func FuzzRead(f *testing.F) {
	for _, m := range []*Message{{Type: TypeReady}, {Type: TypeRun, Run: &Run{Code: "1", TimeoutMs: 5}}, {Type: TypeReply, Reply: &Reply{ID: 3, Error: "x"}}} {
		var b bytes.Buffer
		Write(&b, m)
		f.Add(b.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= 4 && binary.BigEndian.Uint32(data) > MaxFrame {
			if _, err := Read(bytes.NewReader(data)); err == nil {
				t.Fatal("oversized frame accepted")
			}
			return
		}
		m, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, m); err != nil {
			t.Fatalf("re-encoding %+v: %v", m, err)
		}
		m2, err := Read(&b)
		if err != nil || m2.Type != m.Type {
			t.Fatalf("round trip: %+v -> %+v (%v)", m, m2, err)
		}
	})
}
