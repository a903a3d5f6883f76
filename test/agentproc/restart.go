package agentproc

import "testing"

// RestartWith stops the agents, adds args to each one's extra arguments,
// and has start (the suite's own, which starts agents that do not run and
// waits until they are ready) bring them back; when the test ends they are
// restarted with their arguments as before.
func RestartWith(t testing.TB, agents []*Agent, start func(testing.TB), args ...string) {
	t.Helper()
	restart := func(extra func(*Agent) []string) {
		for _, a := range agents {
			a.SetExtraArgs(extra(a)...)
			if err := a.Stop(); err != nil {
				t.Fatalf("stopping %s: %v", a.Name, err)
			}
		}
		start(t)
	}
	before := map[*Agent][]string{}
	for _, a := range agents {
		before[a] = a.ExtraArgs()
	}
	restart(func(a *Agent) []string { return append(before[a], args...) })
	t.Cleanup(func() { restart(func(a *Agent) []string { return before[a] }) })
}
