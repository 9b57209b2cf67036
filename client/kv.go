package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// KV is the API's linearizable key-value store: SETNX, GET, GETDEL,
// compare-and-set and compare-and-delete, with versions (ETags) and TTLs.
type KV struct{ c *Client }

// Entry is a key's value and version.
type Entry struct {
	Value   []byte
	Version uint64
}

func kvPath(key string, q url.Values) string {
	p := "/v1/kv/" + url.PathEscape(key)
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

func ttlQuery(q url.Values, ttl time.Duration) url.Values {
	if ttl > 0 {
		q.Set("ttl", ttl.String())
	}
	return q
}

// version reads an ETag: "12".
func etagVersion(h http.Header) uint64 {
	v, _ := strconv.ParseUint(strings.Trim(strings.TrimPrefix(h.Get("ETag"), "W/"), `"`), 10, 64)
	return v
}

// call sends one KV call; an answer of another status than ok is its
// *Error.
func (k *KV) call(ctx context.Context, mode callMode, method, path string, h http.Header, body []byte, ok int) (*answer, error) {
	a, err := k.c.api(ctx, mode, method, path, h, body)
	if err != nil {
		return nil, err
	}
	if a.status != ok {
		return a, a.errorOf("", 1)
	}
	return a, nil
}

func ifMatch(version uint64) http.Header {
	return http.Header{"If-Match": {`"` + strconv.FormatUint(version, 10) + `"`}}
}

// SetNX sets key to value unless it is set (ttl 0: no expiry). It returns
// the new version; when the key exists, an error matching ErrExists and
// the current entry.
func (k *KV) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, *Entry, error) {
	a, err := k.call(ctx, once, http.MethodPut, kvPath(key, ttlQuery(url.Values{"nx": {"1"}}, ttl)), nil, value, http.StatusCreated)
	if a != nil && a.status == http.StatusConflict {
		return 0, &Entry{Value: a.body, Version: etagVersion(a.header)}, fmt.Errorf("client: SETNX %q: %w", key, ErrExists)
	}
	if err != nil {
		return 0, nil, err
	}
	return etagVersion(a.header), nil, nil
}

// Set sets key to value whatever it holds, and returns the new version.
func (k *KV) Set(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	a, err := k.call(ctx, once, http.MethodPut, kvPath(key, ttlQuery(url.Values{}, ttl)), nil, value, http.StatusOK)
	if err != nil {
		return 0, err
	}
	return etagVersion(a.header), nil
}

// CAS sets key to value if it is at version (If-Match), and returns the
// new version; ErrVersionMismatch when it moved.
func (k *KV) CAS(ctx context.Context, key string, version uint64, value []byte, ttl time.Duration) (uint64, error) {
	a, err := k.call(ctx, once, http.MethodPut, kvPath(key, ttlQuery(url.Values{}, ttl)), ifMatch(version), value, http.StatusOK)
	if err != nil {
		return 0, err
	}
	return etagVersion(a.header), nil
}

// Get reads key (linearizable); ErrNotFound when it is not set.
func (k *KV) Get(ctx context.Context, key string) (*Entry, error) {
	a, err := k.call(ctx, safe, http.MethodGet, kvPath(key, nil), nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return &Entry{Value: a.body, Version: etagVersion(a.header)}, nil
}

// GetDel removes key and returns the value it held; ErrNotFound when it
// was not set.
func (k *KV) GetDel(ctx context.Context, key string) ([]byte, error) {
	return k.del(ctx, key, nil)
}

// CompareAndDelete removes key if it is at version (DELETE with
// If-Match): a lock released only by the holder of its version.
// ErrVersionMismatch when it moved or is gone.
func (k *KV) CompareAndDelete(ctx context.Context, key string, version uint64) ([]byte, error) {
	return k.del(ctx, key, ifMatch(version))
}

func (k *KV) del(ctx context.Context, key string, h http.Header) ([]byte, error) {
	a, err := k.call(ctx, once, http.MethodDelete, kvPath(key, nil), h, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return a.body, nil
}
