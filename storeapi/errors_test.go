package storeapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestUnavailable: the errors that mean the store could not serve the call
// are unavailable however deep they are wrapped; a refusal of the call
// itself, a caller's own cancellation, and an error that only reads like
// one of them (same text, another value) are not.
func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{ErrNoLeader, true},
		{ErrTimeout, true},
		{ErrShutdown, true},
		{ErrNotLeader, true},
		{ErrDiskFull, true},
		{ErrClockJump, true},
		{ErrRemoved, true},
		{fmt.Errorf("apply: %w", fmt.Errorf("forward: %w", ErrNoLeader)), true},
		{errors.Join(errors.New("probe"), ErrRemoved), true},

		{nil, false},
		{ErrTooLarge, false},
		{ErrReservedKey, false},
		{ErrUnknownNode, false},
		{ErrUnreachableNode, false},
		{ErrMembership, false},
		{ErrQuorumAtRisk, false},
		{ErrNotCaughtUp, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{errors.New(ErrNotLeader.Error()), false},
		{fmt.Errorf("%v", ErrNoLeader), false}, // formatted, not wrapped
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
