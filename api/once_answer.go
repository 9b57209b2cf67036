package api

// The once calls' answers, appended field by field instead of marshalled
// by reflection: a once pair is two of them, and encoding/json's
// reflection, map sorting and buffers cost a dozen allocations a pair.
// Each writes exactly the bytes encoding/json writes for the answer it
// replaces (beginAnswer; the holder calls' maps, whose keys it sorts),
// newline included: TestOnceAnswersAsEncodingJSON holds them to it.

import (
	"encoding/base64"
	"strconv"
	"time"
)

// answerBuffer fits every once answer without a result, so that it is
// built on the stack; a result's base64 makes append grow past it.
const answerBuffer = 160

// appendBeginAnswer appends beginAnswer{State: state, Fence: fence,
// LeaseExpiresAt: RFC3339(leaseEnd), TakenOver: takenOver, Result: result}
// as JSON, leaving out the fields encoding/json omits when empty.
func appendBeginAnswer(dst []byte, state string, fence uint64, leaseEnd time.Time, takenOver bool, result *[]byte) []byte {
	dst = append(dst, `{"state":"`...)
	dst = append(dst, state...) // "begun" or "completed": nothing to escape
	dst = append(dst, `",`...)
	dst = appendFence(dst, fence)
	if !leaseEnd.IsZero() {
		dst = appendTimeField(append(dst, ','), "lease_expires_at", leaseEnd)
	}
	if takenOver {
		dst = append(dst, `,"taken_over":true`...)
	}
	if result != nil {
		dst = append(dst, `,"result":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, *result) // as encoding/json writes a []byte
		dst = append(dst, '"')
	}
	return append(dst, "}\n"...)
}

// holderAnswer is which of a holder's calls answers.
type holderAnswer int

const (
	answerRenewed   holderAnswer = iota // {"fence":N,"lease_expires_at":"…"}
	answerCompleted                     // {"fence":N,"state":"completed"}
	answerReleased                      // {"fence":N,"released":true}
)

// appendHolderAnswer appends a holder's answer to fence, as encoding/json
// writes the map of its fields (sorted); leaseEnd is a renew's.
func appendHolderAnswer(dst []byte, ans holderAnswer, fence uint64, leaseEnd time.Time) []byte {
	dst = appendFence(append(dst, '{'), fence)
	switch ans {
	case answerRenewed:
		dst = appendTimeField(append(dst, ','), "lease_expires_at", leaseEnd)
	case answerCompleted:
		dst = append(dst, `,"state":"completed"`...)
	case answerReleased:
		dst = append(dst, `,"released":true`...)
	}
	return append(dst, "}\n"...)
}

func appendFence(dst []byte, fence uint64) []byte {
	return strconv.AppendUint(append(dst, `"fence":`...), fence, 10)
}

// appendTimeField appends "name":"t" with t as httpx.RFC3339 writes it
// (UTC, RFC 3339 with nanoseconds; "" for the zero time). name and the
// time need no escaping.
func appendTimeField(dst []byte, name string, t time.Time) []byte {
	dst = append(append(append(dst, '"'), name...), `":"`...)
	if !t.IsZero() {
		dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	}
	return append(dst, '"')
}
