// Package fence is the one rule of a fenced write: a command only the
// holder of a fence may make (a once claim's renew, complete and release;
// a lock's renew and release), and what its refusal means.
//
// A fence is a number the state machine hands the holder of a claim or a
// lock when it takes it, never 0 and never handed out twice; the state
// machine takes a holder's command only while that fence still holds
// (fsm.CodeFenceMismatch otherwise). Each service keeps its own sentinel
// (once.ErrStaleFence, locks.ErrStaleFence: the faces answer them apart)
// and says why its state machine refused; the rest is here, once.
package fence
