package api

// The body of a holder's call (renew, complete, release) as every client
// sends it, read without encoding/json: a once pair's complete carries one,
// and the decoder's reflection, its buffers and the pointers it fills
// cost more than the rest of the call's handling.

import (
	"bytes"
	"encoding/base64"
	"strconv"
)

// parseFenceBody reads exactly {"fence":N} or {"fence":N,"result":"…"}
// (the result in standard base64), with nothing but whitespace after it:
// the shape client.Once and the documentation send. false for any other
// body: other spacing or order, escapes, null, another field, a number
// that is not a uint64, base64 that does not decode. encoding/json then
// decodes it as before and answers its errors, so no body is read
// differently: where parseFenceBody answers, it answers what the decoder
// would (FuzzFenceBody).
func parseFenceBody(b []byte) (fenceRequest, bool) {
	const open, result = `{"fence":`, `,"result":"`
	if !bytes.HasPrefix(b, []byte(open)) {
		return fenceRequest{}, false
	}
	b = b[len(open):]
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || (b[0] == '0' && n > 1) { // JSON has no leading zeros
		return fenceRequest{}, false
	}
	fence, err := strconv.ParseUint(string(b[:n]), 10, 64)
	if err != nil {
		return fenceRequest{}, false
	}
	req := fenceRequest{Fence: &fence}
	b = b[n:]
	if bytes.HasPrefix(b, []byte(result)) {
		b = b[len(result):]
		end := bytes.IndexByte(b, '"')
		if end < 0 || !base64Alphabet(b[:end]) {
			return fenceRequest{}, false
		}
		// As encoding/json decodes a []byte.
		out := make([]byte, base64.StdEncoding.DecodedLen(end))
		n, err := base64.StdEncoding.Decode(out, b[:end])
		if err != nil {
			return fenceRequest{}, false
		}
		out = out[:n]
		req.Result = &out
		b = b[end+1:]
	}
	if len(b) == 0 || b[0] != '}' {
		return fenceRequest{}, false
	}
	for _, c := range b[1:] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' { // JSON's whitespace
			return fenceRequest{}, false
		}
	}
	return req, true
}

// base64Alphabet reports whether s holds only standard base64's
// characters and padding: nothing a JSON string would have to escape,
// and nothing the decoder skips (line breaks).
func base64Alphabet(s []byte) bool {
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}
