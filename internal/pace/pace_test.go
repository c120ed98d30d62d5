package pace

import (
	"testing"
	"time"
)

func TestSpaced(t *testing.T) {
	c := NewCalls()
	if !c.Spaced() {
		t.Error("the first call is not spaced out")
	}
	if c.Spaced() {
		t.Error("a call right after another is spaced out")
	}
	time.Sleep(BurstGap)
	if !c.Spaced() {
		t.Errorf("a call %v after another is not spaced out", BurstGap)
	}
}
