package resp

import (
	"errors"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// Replies of Redis that clients and scripts depend on, word for word.
const (
	msgSyntax       = "ERR syntax error"
	msgNotInteger   = "ERR value is not an integer or out of range"
	msgOverflow     = "ERR increment or decrement would overflow"
	msgNotFloat     = "ERR value is not a valid float"
	msgNoAuth       = "NOAUTH Authentication required."
	msgWrongPass    = "WRONGPASS invalid username-password pair or user is disabled."
	msgNoPassword   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	msgDBRange      = "ERR DB index is out of range"
	msgSameObject   = "ERR source and destination objects are the same"
	msgIntRange     = "ERR value is out of range, value must between -2147483648 and 2147483647"
	msgNoProto      = "NOPROTO unsupported protocol version"
	msgMaxClients   = "ERR max number of clients reached"
	msgWrongType    = "WRONGTYPE Operation against a key holding the wrong kind of value"
	msgNotSupported = "ERR %s is not supported by idemgate: use MULTI/EXEC (with WATCH), SET NX, SET ... GET, GETDEL, INCR or IDEM.CONSUME for atomic steps"
)

// storeErrors is the one table from the store's errors to replies: the
// first whose error matches wins. Unavailability is CLUSTERDOWN when
// nothing was done (clients may retry), but a timeout leaves a write's
// fate unknown and must not be retried blindly: it is a plain ERR.
var storeErrors = []struct {
	err error
	msg string
}{
	{storeapi.ErrNoLeader, "CLUSTERDOWN no leader: the cluster has no quorum or is electing one; retry"},
	{storeapi.ErrNotLeader, "CLUSTERDOWN no leader: the cluster has no quorum or is electing one; retry"},
	{storeapi.ErrTimeout, "ERR timeout: the command may or may not have been applied"},
	{storeapi.ErrRemoved, "ERR this node was removed from the cluster; use another"},
	{storeapi.ErrShutdown, "ERR this node is shutting down; use another"},
	{storeapi.ErrDiskFull, "ERR disk nearly full: writes are refused until space is freed"},
	{storeapi.ErrClockJump, "CLUSTERDOWN the leader's clock jumped ahead; a new leader is being chosen; retry"},
	{storeapi.ErrTooLarge, "ERR command too large for the store"},
	{storeapi.ErrReservedKey, ""}, // its own text: which keys are reserved
	{fsm.ErrNotInteger, msgNotInteger},
	{fsm.ErrWrongType, msgWrongType},
	{fsm.ErrOverflow, msgOverflow},
	{fsm.ErrTooLong, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
	{fsm.ErrNotFloat, msgNotFloat},
	{fsm.ErrNotFinite, "ERR increment would produce NaN or Infinity"},
	{fsm.ErrBadCommand, ""}, // its own text: what was wrong with the key or value
	{tokens.ErrBadScope, ""},
	{tokens.ErrBadToken, ""},
	{tokens.ErrBadTTL, ""},
}

// errorReply is the reply line (without '-') for an error of the store.
func errorReply(err error) string {
	for _, e := range storeErrors {
		if errors.Is(err, e.err) {
			if e.msg == "" {
				return "ERR " + err.Error()
			}
			return e.msg
		}
	}
	return "ERR " + err.Error()
}
