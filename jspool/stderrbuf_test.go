package jspool

import (
	"bytes"
	"strings"
	"testing"
)

// A worker that printed more than the buffer keeps before V8 ran out of memory:
// the report at the end is still seen (it was lost when only the head was
// kept); a short stderr is kept whole.
func TestWorkerStderrKeepsTheEnd(t *testing.T) {
	b := &boundedBuffer{max: 1024}
	b.Write([]byte("short\n"))
	if got := string(b.Bytes()); got != "short\n" {
		t.Fatalf("short stderr: %q", got)
	}
	for range 100 {
		b.Write(bytes.Repeat([]byte("x"), 100))
	}
	b.Write([]byte("\n<--- Last few GCs --->\nFatal JavaScript invalid size error 169220804\n"))
	got := b.Bytes()
	if !isHeapExhaustion(got) {
		t.Fatalf("the out-of-memory report at the end is lost:\n%s", got)
	}
	if !bytes.HasPrefix(got, []byte("short\n")) || !strings.Contains(string(got), "bytes left out") || len(got) > 1024+1024/4+64 {
		t.Fatalf("head, marker or bound wrong (%d bytes):\n%s", len(got), got)
	}
	// Positive control: stderr with no such report is not heap exhaustion.
	if isHeapExhaustion([]byte("short\n" + strings.Repeat("x", 5000))) {
		t.Fatal("plain output taken for an out-of-memory report")
	}
}
