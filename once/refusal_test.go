package once

import (
	"testing"

	"github.com/idemgate/idemgate/command"
)

// TestClaimRefusal: each refusal of a holder's fence says why, exactly;
// any other answer is no refusal.
func TestClaimRefusal(t *testing.T) {
	c := &command.Command{Fence: 7}
	for _, tc := range []struct {
		res     command.Result
		why     string
		refused bool
	}{
		{command.Result{Code: command.CodeFenceMismatch}, "there is no claim (released, or past its retention)", true},
		{command.Result{Code: command.CodeFenceMismatch, Fence: 7, ExpiresAt: 1}, "its lease ran out", true},
		{command.Result{Code: command.CodeFenceMismatch, Fence: 9}, "fence 9 holds it now", true},
		{command.Result{Code: command.CodeWrongState, Fence: 7}, "the claim is completed", true},
		{command.Result{Code: command.CodeNotFound}, "", false},
		{command.Result{Code: command.CodeStorage}, "", false},
	} {
		if why, refused := claimRefusal(c, &tc.res); why != tc.why || refused != tc.refused {
			t.Errorf("claimRefusal(%+v) = %q, %v; want %q, %v", tc.res, why, refused, tc.why, tc.refused)
		}
	}
}
