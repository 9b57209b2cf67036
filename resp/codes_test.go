package resp

import (
	"sort"
	"testing"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// readByHandlers are the codes this face's commands read as outcomes of
// their own (a nil, a 0, a refusal of their own words), beside the
// store's errors storeapi.Answers answers, each with who reads it.
var readByHandlers = map[command.Code]string{
	command.CodeNotFound: "a nil or a 0: GET's, DEL's, the list commands' (LSET's no such key; answerCode's also, " +
		"blocking.go), IDEM.CONSUME's (tokens)",
	command.CodeExists: "SETNX, MSETNX, COPY, RENAMENX answer 0, SET NX nil (answerCode's also, " +
		"setReply); IDEM.BEGIN and IDEM.LOCK through once and locks (held); IDEM.TOKEN: a " +
		"128-bit token taken already, answered as ERR and the store's text",
	command.CodeVersionMismatch: "SET IFEQ and DELEX's conditions (setReply, answerCode), the CAS commands " +
		"(commands_cas.go); plain SET and DEL send no version",
	command.CodeUnchanged:     "EXPIRE's NX/XX/GT/LT and GETEX answer 0 or the value (answerChanged); LINSERT without its pivot -1",
	command.CodeOutOfRange:    "a guarded increment (KVIncrBoundedCommand, the HTTP face's; INCR sends none); LSET's index out of range",
	command.CodeFenceMismatch: "IDEM.RENEW, IDEM.COMPLETE, IDEM.RELEASE, IDEM.RENEWLOCK, IDEM.UNLOCK: once's and locks' refusals (stale fence)",
	command.CodeWrongState:    "IDEM.RENEW, IDEM.COMPLETE, IDEM.RELEASE: once's refusal (the claim is completed)",
	command.CodeKeyReuse:      "IDEM.BEGIN: onceError's own reply",
	command.CodeQueueFull:     "IDEM.LOCK: lockError's BUSY",
}

// TestEveryCodeAnswered: every code a store operation of this face's
// commands may answer (its row's Op.Codes) is a success, has a row of
// storeapi.Answers, or is one the commands read (readByHandlers): a code
// a row gains is answered on purpose, not by accident as "ERR" and the
// store's text.
func TestEveryCodeAnswered(t *testing.T) {
	users := map[command.Code][]string{}
	for name, c := range commands {
		if c.op == command.TypeUnknown {
			continue
		}
		for code := range c.op.Op().Codes.All() {
			users[code] = append(users[code], name)
		}
	}
	if len(users) == 0 {
		t.Fatal("no command of this face declares a code: the table is not read")
	}
	for code, names := range users {
		err := (&command.Result{Code: code}).Err()
		_, read := readByHandlers[code]
		_, answered := storeapi.AnswerFor(err)
		if err == nil || read || answered {
			continue
		}
		sort.Strings(names)
		t.Errorf("code %d (%v) of %v: no reply of storeapi.Answers, and no command reads it", code, err, names)
	}
	for code := range readByHandlers {
		if users[code] == nil {
			t.Errorf("code %d is read by no command's operation: drop it from readByHandlers", code)
		}
	}
}
