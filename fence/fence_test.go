package fence

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgate/idemgate/command"
)

var errStale = errors.New("the fence no longer holds it")

// refusal refuses on CodeFenceMismatch, saying why when the result names
// another fence.
func refusal(c *command.Command, res *command.Result) (string, bool) {
	switch {
	case res.Code != command.CodeFenceMismatch:
		return "", false
	case res.Fence != 0 && res.Fence != c.Fence:
		return "another holds it", true
	}
	return "", true
}

// TestApply: each answer of the state machine, and fence 0, maps to the
// one outcome: the result, the sentinel (with why), or the result's or
// the store's own error.
func TestApply(t *testing.T) {
	errDown := errors.New("no leader")
	for _, tc := range []struct {
		name     string
		fence    uint64
		res      *command.Result
		err      error
		proposed bool // apply was called
		want     string
		is       error
	}{
		{"taken", 7, &command.Result{Code: command.CodeOK, ExpiresAt: 42}, nil, true, "", nil},
		{"fence 0", 0, &command.Result{Code: command.CodeOK}, nil, false, "the fence no longer holds it: fence 0 was never handed out", errStale},
		{"refused, why", 7, &command.Result{Code: command.CodeFenceMismatch, Fence: 9}, nil, true, "the fence no longer holds it: another holds it", errStale},
		{"refused, no why", 7, &command.Result{Code: command.CodeFenceMismatch}, nil, true, "the fence no longer holds it", errStale},
		{"another answer", 7, &command.Result{Code: command.CodeNotFound}, nil, true, command.ErrNotFound.Error(), command.ErrNotFound},
		{"the store failed", 7, nil, errDown, true, "no leader", errDown},
	} {
		proposed := false
		apply := func(_ context.Context, c *command.Command) (*command.Result, error) {
			proposed = true
			return tc.res, tc.err
		}
		res, err := Apply(context.Background(), &command.Command{Fence: tc.fence}, apply, errStale, refusal)
		if proposed != tc.proposed {
			t.Errorf("%s: proposed %v, want %v", tc.name, proposed, tc.proposed)
		}
		if tc.is == nil {
			if err != nil || res != tc.res {
				t.Errorf("%s: Apply = %v, %v; want the result", tc.name, res, err)
			}
			continue
		}
		if res != nil || err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("%s: Apply = %v, %v; want %q (is %v)", tc.name, res, err, tc.want, tc.is)
		}
	}
}
