package storeapi

import "github.com/idemgate/idemgate/command"

// OpResult is what one command of a pipeline came to: the state machine's
// result (whose Code says how it went), or the error that kept it from
// being applied.
type OpResult struct {
	Res *command.Result
	Err error
}
