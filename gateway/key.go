package gateway

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// Tenant errors; the gateway answers each with 400 invalid-key.
var (
	errTenantChars = errors.New("the tenant header contains control characters")
	// Two tenant headers: the gateway would scope the record by one and
	// the upstream might act for the other.
	errTenantDuplicate = errors.New("more than one tenant header was sent")
)

// requestKey extracts the route's key from the request (from body, the
// JSON body, for key: json:/...) and checks it: its syntax, then the
// route's key_min_length and key_format. present is false when no key was
// sent at all.
func (r *route) requestKey(ctx *fasthttp.RequestCtx, body *jsonNode) (key []byte, present bool, err error) {
	key, present, err = r.sentKey(ctx, body)
	if err == nil && present {
		err = r.checkFormat(key)
	}
	return key, present, err
}

// sentKey is the key as the client sent it, its syntax checked.
func (r *route) sentKey(ctx *fasthttp.RequestCtx, body *jsonNode) (key []byte, present bool, err error) {
	var first []byte
	n := 0
	if r.keyJSON != nil {
		return jsonKey(body, r.keyJSON)
	}
	if r.keyQuery {
		// Counted in place: Args.PeekMulti allocates a slice per call,
		// and this runs on every replay.
		for k, v := range ctx.QueryArgs().All() {
			if string(k) == r.keyName {
				if n == 0 {
					first = v
				}
				n++
			}
		}
	} else if vals := ctx.Request.Header.PeekAll(r.keyName); len(vals) > 0 {
		first, n = vals[0], len(vals)
	}
	switch n {
	case 0:
		return nil, false, nil
	case 1:
		k, err := httpx.ParseKey(first)
		return k, true, err
	}
	return nil, true, httpx.ErrKeyDuplicate
}

// jsonKey returns the string at ptr: the idempotency key of a route with
// key: json:/... present is false when the body has no such member (or it
// is null).
func jsonKey(n *jsonNode, ptr []string) (key []byte, present bool, err error) {
	v := n.lookup(ptr)
	if v == nil || (v.kind == 0 && v.scalar == nil) {
		return nil, false, nil
	}
	s, ok := v.scalar.(string)
	if v.kind != 0 || !ok {
		return nil, true, errJSONKeyString
	}
	k, err := httpx.CheckKey([]byte(s))
	return k, true, err
}

// checkFormat checks a key against the route's key_min_length and
// key_format.
func (r *route) checkFormat(k []byte) error {
	if len(k) < r.keyMinLen {
		return fmt.Errorf("the idempotency key is shorter than %d characters (this route's key_min_length)", r.keyMinLen)
	}
	if r.keyFormat != nil && !r.keyFormat.Match(k) {
		return fmt.Errorf("the idempotency key does not have this route's format (key_format: %s)", r.keyFormatText)
	}
	return nil
}

// requestTenant derives the tenant: a header set by the auth layer, or a
// digest of Authorization, so one credential can never replay another's
// responses. It appends to dst. The header must come once: of two, the
// record would be scoped by one and the upstream might act for the other.
func (r *route) requestTenant(ctx *fasthttp.RequestCtx, dst []byte) ([]byte, error) {
	name := r.tenantHeader
	if r.tenantAuth {
		name = "Authorization"
	}
	if name == "" {
		return dst, nil
	}
	vals := ctx.Request.Header.PeekAll(name)
	switch len(vals) {
	case 0:
		return dst, nil
	case 1:
	default:
		return nil, errTenantDuplicate
	}
	v := vals[0]
	switch {
	case r.tenantAuth:
		if len(v) == 0 {
			return dst, nil
		}
		sum := authDigest(v)
		return hex.AppendEncode(dst, sum[:16]), nil
	default:
		for _, c := range v {
			if c < 0x20 || c == 0x7f {
				return nil, errTenantChars
			}
		}
		return append(dst, v...), nil
	}
}

// authDigest hashes an Authorization value as RFC 9110 11.4 reads it: the
// auth scheme is case-insensitive and one or more spaces part it from the
// credentials, so "bearer  abc" is "Bearer abc" and must be the same
// tenant, while the credentials stay as sent (case-sensitive). The scheme
// is hashed capitalized as it is usually written (Bearer, Basic, Digest),
// so those spellings hash as they did before this normalization and their
// records keep their tenant. It allocates nothing.
func authDigest(auth []byte) [32]byte {
	scheme, cred := auth, []byte(nil)
	if i := bytes.IndexAny(auth, " \t"); i >= 0 {
		scheme, cred = auth[:i], bytes.TrimRight(bytes.TrimLeft(auth[i:], " \t"), " \t")
	}
	s := hashers.Get().(*hashScratch)
	s.h.Reset()
	for i := 0; i < len(scheme); {
		n := copy(s.word[:], scheme[i:])
		for j, c := range s.word[:n] {
			switch {
			case i+j == 0 && 'a' <= c && c <= 'z':
				s.word[j] = c - 'a' + 'A'
			case i+j > 0 && 'A' <= c && c <= 'Z':
				s.word[j] = c - 'A' + 'a'
			}
		}
		s.h.Write(s.word[:n])
		i += n
	}
	if len(cred) > 0 {
		s.h.Write(s.space[:])
		s.h.Write(cred)
	}
	s.h.Sum(s.sum[:0])
	sum := s.sum
	hashers.Put(s)
	return sum
}
