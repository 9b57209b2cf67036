package locks

import (
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// TestLockRefusal: a refused fence says when its lease ran out when the
// state machine knows; any other answer is no refusal.
func TestLockRefusal(t *testing.T) {
	end := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, tc := range []struct {
		res     fsm.Result
		why     string
		refused bool
	}{
		{fsm.Result{Code: fsm.CodeFenceMismatch}, "", true},
		{fsm.Result{Code: fsm.CodeFenceMismatch, ExpiresAt: end.UnixNano()}, "its lease ran out at 2026-01-02T03:04:05.0000006Z", true},
		{fsm.Result{Code: fsm.CodeWrongState}, "", false},
		{fsm.Result{Code: fsm.CodeStorage}, "", false},
	} {
		if why, refused := lockRefusal(&fsm.Command{Fence: 7}, &tc.res); why != tc.why || refused != tc.refused {
			t.Errorf("lockRefusal(%+v) = %q, %v; want %q, %v", tc.res, why, refused, tc.why, tc.refused)
		}
	}
}
