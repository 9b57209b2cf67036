package resp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// INFO errorstats and total_error_replies, as Redis keeps them: every
// error reply written to a client, counted by its code (the first word:
// ERR, WRONGTYPE, NOPERM, a script's own through redis.error_reply), the
// node's since it started or since CONFIG RESETSTAT. An error inside
// EXEC's array counts, as in Redis; one a script's redis.pcall caught
// does not (Redis counts it too). A script can make any code
// (redis.error_reply), so the table is bounded as Redis 7.4 bounds it: at
// the 129th code it is emptied, holds ERRORSTATS_DISABLED alone, and
// counts no code until CONFIG RESETSTAT (total_error_replies goes on).

// maxErrorCodes is Redis's ERROR_STATS_NUMBER.
const maxErrorCodes = 128

// errorStats is the node's table.
type errorStats struct {
	mu       sync.Mutex
	codes    map[string]int64
	total    int64
	disabled bool
}

// add counts one error reply of msg (without its '-').
func (e *errorStats) add(msg string) {
	code := errorCode(msg)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	if e.disabled {
		return
	}
	if _, ok := e.codes[code]; !ok && len(e.codes) >= maxErrorCodes {
		e.codes = map[string]int64{"ERRORSTATS_DISABLED": 1}
		e.disabled = true
		return
	}
	if e.codes == nil {
		e.codes = map[string]int64{}
	}
	e.codes[code]++
}

// errorCode is the code Redis counts an error reply under: the text
// before the first space within its first 32 bytes (with the '-'), ERR
// when there is none.
func errorCode(msg string) string {
	if i := strings.IndexByte(msg[:min(len(msg), 31)], ' '); i >= 0 {
		return msg[:i]
	}
	return "ERR"
}

// reset is CONFIG RESETSTAT's.
func (e *errorStats) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.codes, e.total, e.disabled = nil, 0, false
}

// totalReplies is INFO stats' total_error_replies.
func (e *errorStats) totalReplies() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total
}

// section writes INFO's errorstats section: errorstat_CODE:count=N, in
// code order, a code's ':' and line ends written as '_'.
func (e *errorStats) section(b *strings.Builder) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b.WriteString("# Errorstats\r\n")
	safe := strings.NewReplacer(":", "_", "\r", "_", "\n", "_")
	for _, code := range slices.Sorted(maps.Keys(e.codes)) {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", safe.Replace(code), e.codes[code])
	}
	b.WriteString("\r\n")
}
