package supervisor

import (
	"fmt"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/internal/flaghint"
)

// Questions per server. A call asks at most a few questions (one about its
// arguments, proxy.MaxQuestions about hosts its command wants), but a model
// calling in a loop would have each call ask again, and the user would be
// asked without end. So the server asks at most Options.MaxQuestions
// (DefaultMaxQuestions) questions in any minute and ten times that in any
// hour, all calls and their commands together; a question past either is not
// put, and its call or connection is refused as an unanswered one is, saying
// why and when the next may be asked. Questions not put (a client without
// elicitation, a target granted meanwhile) do not count.

// DefaultMaxQuestions is how many questions a server asks the user in a
// minute at most (--max-questions).
const DefaultMaxQuestions = 6

// questionsPerHour is how many times the minute's bound the server asks in an
// hour at most.
const questionsPerHour = 10

// askRate counts the questions put, to bound them per minute and per hour.
type askRate struct {
	mu    sync.Mutex
	times []time.Time // when each question of the last hour was put, oldest first
}

// take counts a question put at now if the bounds (perMinute, and ten times
// that an hour) allow it; else it returns why not, in a few words.
func (r *askRate) take(now time.Time, perMinute int) string {
	if perMinute <= 0 {
		perMinute = DefaultMaxQuestions
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	hourAgo := now.Add(-time.Hour)
	for len(r.times) > 0 && !r.times[0].After(hourAgo) {
		r.times = r.times[1:]
	}
	inMinute := 0
	minuteAgo := now.Add(-time.Minute)
	for i := len(r.times) - 1; i >= 0 && r.times[i].After(minuteAgo); i-- {
		inMinute++
	}
	switch {
	case inMinute >= perMinute:
		next := r.times[len(r.times)-inMinute].Add(time.Minute)
		return fmt.Sprintf("the user was not asked: this server already asked %s in the last minute, the most it asks (%s); it may ask again in %s", nQuestions(perMinute), flaghint.Serve(flaghint.MaxQuestions), next.Sub(now).Round(time.Second))
	case len(r.times) >= perMinute*questionsPerHour:
		next := r.times[0].Add(time.Hour)
		return fmt.Sprintf("the user was not asked: this server already asked %s in the last hour, the most it asks (10 × %s); it may ask again in %s", nQuestions(perMinute*questionsPerHour), flaghint.Serve(flaghint.MaxQuestions), next.Sub(now).Round(time.Second))
	}
	r.times = append(r.times, now)
	return ""
}

func nQuestions(n int) string {
	if n == 1 {
		return "1 question"
	}
	return fmt.Sprintf("%d questions", n)
}
