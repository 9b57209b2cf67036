package locks

import (
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestLockRefusal: a refused fence says when its lease ran out when the
// state machine knows; any other answer is no refusal.
func TestLockRefusal(t *testing.T) {
	end := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, tc := range []struct {
		res     command.Result
		why     string
		refused bool
	}{
		{command.Result{Code: command.CodeFenceMismatch}, "", true},
		{command.Result{Code: command.CodeFenceMismatch, ExpiresAt: end.UnixNano()}, "its lease ran out at 2026-01-02T03:04:05.0000006Z", true},
		{command.Result{Code: command.CodeWrongState}, "", false},
		{command.Result{Code: command.CodeStorage}, "", false},
	} {
		if why, refused := lockRefusal(&command.Command{Fence: 7}, &tc.res); why != tc.why || refused != tc.refused {
			t.Errorf("lockRefusal(%+v) = %q, %v; want %q, %v", tc.res, why, refused, tc.why, tc.refused)
		}
	}
}
