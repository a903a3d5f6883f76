package suite

import (
	"testing"
	"time"
)

// WaitFor polls cond every 100 ms until it holds. Once within is over, the
// test fails with what cond last saw, followed by what each of also says
// (the agents that exited meanwhile, say).
func WaitFor(t testing.TB, within time.Duration, cond func() (bool, string), also ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for _, f := range also {
				seen += f()
			}
			t.Fatalf("gave up after %s: %s", within, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
