package api

import "github.com/idemgate/idemgate/internal/testsupport"

// The HTTP test helpers both faces' tests share (internal/testsupport), by
// their short names.
type reply = testsupport.Reply

var (
	do          = testsupport.MustDo
	postJSON    = testsupport.MustPostJSON
	rawReply    = testsupport.RawReply
	rawExchange = testsupport.RawExchange
)
