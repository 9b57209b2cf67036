package httpx

import (
	"errors"

	"github.com/idemgate/idemgate/config"
)

// MaxClientKeyLen bounds a key a client names: an idempotency key, a KV
// key; the one limit a route's key_min_length is checked against. The
// stored key (scope, tenant and key together) is bounded by
// command.MaxStoredKeyLen.
const MaxClientKeyLen = config.MaxKeyLength

// Key errors; a listener answers each with 400 invalid-key.
var (
	errKeyEmpty     = errors.New("the idempotency key is empty")
	errKeyTooLong   = errors.New("the idempotency key is longer than 255 characters")
	errKeyChars     = errors.New("the idempotency key must be visible ASCII (0x21-0x7E)")
	errKeySFString  = errors.New("the idempotency key is a malformed RFC 8941 string")
	ErrKeyDuplicate = errors.New("more than one idempotency key was sent")
)

// ParseKey decodes an idempotency key (the gateway's, and the API's
// Idempotency-Key header) sent as a bare token (as Stripe's clients do) or
// as an RFC 8941 sf-string `"..."` (as the IETF draft does); both name the
// same key. The result aliases raw unless the string had escapes.
func ParseKey(raw []byte) ([]byte, error) {
	if len(raw) >= 2 && raw[0] == '"' {
		return parseSFString(raw)
	}
	return CheckKey(raw)
}

// CheckKey checks a decoded key: 1 to MaxClientKeyLen visible ASCII bytes.
func CheckKey(k []byte) ([]byte, error) {
	if len(k) == 0 {
		return nil, errKeyEmpty
	}
	if len(k) > MaxClientKeyLen {
		return nil, errKeyTooLong
	}
	for _, c := range k {
		if c < 0x21 || c > 0x7e {
			return nil, errKeyChars
		}
	}
	return k, nil
}

// parseSFString decodes an RFC 8941 sf-string: DQUOTE *(unescaped / "\"
// ( DQUOTE / "\" )) DQUOTE, unescaped being 0x20-0x7E but DQUOTE and "\".
func parseSFString(raw []byte) ([]byte, error) {
	if raw[len(raw)-1] != '"' {
		return nil, errKeySFString
	}
	inner := raw[1 : len(raw)-1]
	var out []byte // allocated only when there are escapes
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case c == '\\':
			if i+1 >= len(inner) || (inner[i+1] != '"' && inner[i+1] != '\\') {
				return nil, errKeySFString
			}
			if out == nil {
				out = append(make([]byte, 0, len(inner)), inner[:i]...)
			}
			i++
			out = append(out, inner[i])
		case c == '"' || c < 0x20 || c > 0x7e:
			return nil, errKeySFString
		default:
			if out != nil {
				out = append(out, c)
			}
		}
	}
	if out == nil {
		out = inner
	}
	return CheckKey(out)
}
