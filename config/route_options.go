package config

import (
	"fmt"
	"regexp"
	"strings"
)

// HopByHopHeaders concern one connection only (RFC 9110 7.6.1): never
// forwarded, stored or replayed, whatever a route says.
var HopByHopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade"}

// MaxKeyLength is the longest key a client names: an idempotency key, a
// KV key (the listeners' httpx.MaxClientKeyLen).
const MaxKeyLength = 255

// KeyFormatUUID is the key_format that asks for a UUID (any version, in
// its 8-4-4-4-12 hex form, either case).
const KeyFormatUUID = "uuid"

// validateOptions checks the options peer gateways have: fingerprint,
// key format and length, dropped headers.
func (r *Route) validateOptions(at string) error {
	var err error
	if r.Fingerprint, err = oneOf(at+".fingerprint", r.Fingerprint, "raw", "json"); err != nil {
		return err
	}
	if len(r.FingerprintIgnore) > 0 && r.Fingerprint != "json" {
		return fieldErr(at+".fingerprint_ignore", "needs fingerprint: json (a raw body has no members to ignore)")
	}
	for j, p := range r.FingerprintIgnore {
		if _, err := ParsePointer(p); err != nil || p == "" {
			return fieldErr(fmt.Sprintf("%s.fingerprint_ignore[%d]", at, j), "%q: want a JSON pointer (RFC 6901) such as /meta/request_time", p)
		}
	}
	if _, err := CompileKeyFormat(r.KeyFormat); err != nil {
		return fieldErr(at+".key_format", "%v", err)
	}
	if r.KeyMinLength < 0 || r.KeyMinLength > MaxKeyLength {
		return fieldErr(at+".key_min_length", "%d: want 0 to %d", r.KeyMinLength, MaxKeyLength)
	}
	if r.ReconcileID != "" {
		kind, ptr, _ := strings.Cut(r.ReconcileID, ":")
		if _, err := ParsePointer(ptr); kind != "json" || ptr == "" || err != nil {
			return fieldErr(at+".reconcile_id", "%q: want json:/pointer, the response member that identifies the upstream's charge, such as json:/id", r.ReconcileID)
		}
	}
	replayed := map[string]bool{}
	for _, h := range r.ReplayHeaders {
		replayed[strings.ToLower(h)] = true
	}
	for j, h := range r.DropHeaders {
		field := fmt.Sprintf("%s.drop_headers[%d]", at, j)
		if !tokenRe.MatchString(h) {
			return fieldErr(field, "%q is not a header name", h)
		}
		for _, hop := range HopByHopHeaders {
			if strings.EqualFold(h, hop) {
				return fieldErr(field, "%q is hop-by-hop: it is never stored or replayed anyway", h)
			}
		}
		if replayed[strings.ToLower(h)] {
			return fieldErr(field, "%q is in replay_headers too: a header is either replayed or dropped", h)
		}
	}
	return nil
}

// CompileKeyFormat compiles a route's key_format: "" (any key), "uuid", or
// a regular expression (RE2 syntax) the whole key must match.
func CompileKeyFormat(f string) (*regexp.Regexp, error) {
	switch f {
	case "":
		return nil, nil
	case KeyFormatUUID:
		return regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`), nil
	}
	if len(f) > 1024 {
		return nil, fmt.Errorf("the regular expression is longer than 1024 characters")
	}
	if _, err := regexp.Compile(f); err != nil { // its error, not the anchored one's
		return nil, fmt.Errorf("%q: want uuid or a regular expression: %v", f, err)
	}
	return regexp.Compile(`^(?:` + f + `)$`)
}

// ParsePointer splits a JSON pointer (RFC 6901) into its reference tokens,
// unescaped: "/a~1b/0" is ["a/b", "0"]. "" is the whole document.
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("%q: a JSON pointer starts with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		for k := 0; k < len(s); k++ {
			if s[k] == '~' && (k+1 == len(s) || (s[k+1] != '0' && s[k+1] != '1')) {
				return nil, fmt.Errorf("%q: ~ must be followed by 0 or 1", p)
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}
