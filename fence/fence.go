package fence

import (
	"context"
	"fmt"

	"github.com/idemgate/idemgate/command"
)

// Refusal says whether res, the state machine's answer to the holder's
// command c, refuses c's fence, and why ("" for no more than the
// service's sentinel says). A result that is no refusal of the fence is
// not one (refused false): its own error is the answer.
type Refusal func(c *command.Command, res *command.Result) (why string, refused bool)

// Apply proposes c, a command of the holder of c.Fence, through apply,
// and returns its result when the state machine took it. A refused fence
// is stale (the service's sentinel, for errors.Is) with why wrapped after
// it; fence 0 is refused before anything is proposed, for no holder was
// ever handed it. Any other answer is the result's own error, or apply's.
func Apply(ctx context.Context, c *command.Command, apply func(context.Context, *command.Command) (*command.Result, error),
	stale error, refusal Refusal) (*command.Result, error) {
	if c.Fence == 0 {
		return nil, fmt.Errorf("%w: fence 0 was never handed out", stale)
	}
	res, err := apply(ctx, c)
	if err != nil {
		return nil, err
	}
	if res.Code == command.CodeOK {
		return res, nil
	}
	why, refused := refusal(c, res)
	switch {
	case !refused:
		return nil, res.Err()
	case why == "":
		return nil, stale
	}
	return nil, fmt.Errorf("%w: %s", stale, why)
}
