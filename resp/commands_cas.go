package resp

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// Redis 8.4's compare-and-set and compare-and-delete: SET's IFEQ, IFNE,
// IFDEQ and IFDNE (parseSet), DELEX and DIGEST. A state transition guarded
// by the state the caller saw (SET order:42 PAID IFEQ PROCESSING) and a
// lock released only by its holder (DELEX lock IFEQ token) need neither
// a script nor a transaction; the state machine checks the condition in
// the command's own apply (fsm/condition.go).

// msgBadDigest answers an IFDEQ/IFDNE digest that is not hexadecimal.
const msgBadDigest = "ERR the digest must be 1 to 16 hexadecimal digits, as DIGEST answers it"

// condition is the value condition an option names, command.SetPlain if none.
func condition(opt string) command.SetMode {
	switch {
	case eq(opt, "ifeq"):
		return command.SetIfEq
	case eq(opt, "ifne"):
		return command.SetIfNe
	case eq(opt, "ifdeq"):
		return command.SetIfDigestEq
	case eq(opt, "ifdne"):
		return command.SetIfDigestNe
	}
	return command.SetPlain
}

// parseDigest reads a digest as DIGEST prints it (16 hex digits; fewer,
// and either case, are read too).
func parseDigest(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	d, err := strconv.ParseUint(string(b), 16, 64)
	return d, err == nil
}

// formatDigest is DIGEST's answer: 16 lowercase hex digits.
func formatDigest(value []byte) []byte {
	return hex.AppendEncode(nil, binary.BigEndian.AppendUint64(nil, command.Digest(value)))
}

// planDelex is DELEX key [IFEQ v|IFNE v|IFDEQ d|IFDNE d]: 1 if the key was
// removed, 0 if it was absent or its value did not meet the condition.
func planDelex(c *conn, a [][]byte) plan {
	op := command.KVDeleteCommand(a[1])
	switch {
	case len(a) == 2:
	case len(a) == 4 && condition(string(a[2])) != command.SetPlain:
		mode := condition(string(a[2]))
		if mode == command.SetIfDigestEq || mode == command.SetIfDigestNe {
			d, ok := parseDigest(a[3])
			if !ok {
				return plan{err: msgBadDigest}
			}
			op = command.KVDeleteIfCommand(a[1], mode, nil, d)
		} else {
			op = command.KVDeleteIfCommand(a[1], mode, a[3], 0)
		}
	default:
		return plan{err: msgSyntax}
	}
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(code command.Code) { w.integer(int64(boolInt(code == command.CodeOK))) },
			command.CodeNotFound, command.CodeVersionMismatch)
	}}
}

// cmdDigest is DIGEST key: the value's digest, or nil.
func cmdDigest(c *conn, ctx context.Context, a [][]byte) {
	e, ok, err := c.local(ctx, a[1])
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	answerDigest(&c.w, e, ok)
}

func txDigest(a [][]byte) plan {
	return txReads(a[1:2], true, func(w *writer, es []command.KVEntry, oks []bool) { answerDigest(w, es[0], oks[0]) })
}

func answerDigest(w *writer, e command.KVEntry, ok bool) {
	switch {
	case !ok:
		w.null()
		return
	case e.Kind != command.KindString:
		w.errorLine(msgWrongType)
		return
	}
	w.bulk(formatDigest(e.Value))
}
