package supervisor

import (
	"strings"
	"testing"
	"time"
)

// TestAskRate: at most perMinute questions in any minute and ten times that in
// any hour; a question past them is refused, saying when the next may come.
func TestAskRate(t *testing.T) {
	var r askRate
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		if why := r.take(t0.Add(time.Duration(i)*time.Second), 3); why != "" {
			t.Fatalf("question %d: %s", i, why)
		}
	}
	why := r.take(t0.Add(10*time.Second), 3)
	if !strings.Contains(why, "already asked 3 questions in the last minute") || !strings.Contains(why, "may ask again in 50s") {
		t.Errorf("the fourth in a minute: %q", why)
	}
	// A minute after the first, one more may be asked.
	if why := r.take(t0.Add(61*time.Second), 3); why != "" {
		t.Errorf("a minute later: %s", why)
	}
	// Spread over the hour: 30 (10 × 3), then refused until the first is an
	// hour old.
	var r2 askRate
	for i := 0; i < 30; i++ {
		if why := r2.take(t0.Add(time.Duration(i)*2*time.Minute), 3); why != "" {
			t.Fatalf("question %d of the hour: %s", i, why)
		}
	}
	if why := r2.take(t0.Add(59*time.Minute+30*time.Second), 3); !strings.Contains(why, "30 questions in the last hour") {
		t.Errorf("the 31st in an hour: %q", why)
	}
	if why := r2.take(t0.Add(60*time.Minute+time.Second), 3); why != "" {
		t.Errorf("an hour after the first: %s", why)
	}
}
