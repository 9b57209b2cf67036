package once

import (
	"testing"

	"github.com/idemgate/idemgate/fsm"
)

// TestClaimRefusal: each refusal of a holder's fence says why, exactly;
// any other answer is no refusal.
func TestClaimRefusal(t *testing.T) {
	c := &fsm.Command{Fence: 7}
	for _, tc := range []struct {
		res     fsm.Result
		why     string
		refused bool
	}{
		{fsm.Result{Code: fsm.CodeFenceMismatch}, "there is no claim (released, or past its retention)", true},
		{fsm.Result{Code: fsm.CodeFenceMismatch, Fence: 7, ExpiresAt: 1}, "its lease ran out", true},
		{fsm.Result{Code: fsm.CodeFenceMismatch, Fence: 9}, "fence 9 holds it now", true},
		{fsm.Result{Code: fsm.CodeWrongState, Fence: 7}, "the claim is completed", true},
		{fsm.Result{Code: fsm.CodeNotFound}, "", false},
		{fsm.Result{Code: fsm.CodeStorage}, "", false},
	} {
		if why, refused := claimRefusal(c, &tc.res); why != tc.why || refused != tc.refused {
			t.Errorf("claimRefusal(%+v) = %q, %v; want %q, %v", tc.res, why, refused, tc.why, tc.refused)
		}
	}
}
