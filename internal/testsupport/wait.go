package testsupport

import "time"

// Failer is what WaitFor needs of a test (testing.TB has it).
type Failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitFor polls ok every 20 ms until it holds, or fails t after timeout
// naming what it waited for.
func WaitFor(t Failer, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
