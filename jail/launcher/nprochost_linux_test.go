package launcher

import "testing"

// searchTasks finds the kernel's count within the margin, from any hint: a
// right one costs two forks, a wrong one or none a bisection.
func TestSearchTasks(t *testing.T) {
	for _, c := range []struct{ count, hint, maxTries int }{
		{count: 300, hint: 290, maxTries: 2},
		{count: 300, hint: 300, maxTries: 2},
		{count: 300, hint: 240, maxTries: 20},
		{count: 300, hint: 5000, maxTries: 20},
		{count: 300, hint: -1, maxTries: 20},
		{count: 0, hint: -1, maxTries: 20},
		{count: 90000, hint: 12, maxTries: 20},
	} {
		tries := 0
		up, ok := searchTasks(c.hint, 96367, 64, func(n int) bool { tries++; return c.count >= n })
		if !ok || up <= c.count || up > c.count+64 || tries > c.maxTries {
			t.Errorf("count %d, hint %d: up %d, ok %v after %d forks; want the count below up, up at most 64 above, in %d forks at most", c.count, c.hint, up, ok, tries, c.maxTries)
		}
	}
	if _, ok := searchTasks(-1, 1000, 64, func(n int) bool { return n <= 1000 }); ok {
		t.Error("a user at the hard limit already: want not ok")
	}
}
