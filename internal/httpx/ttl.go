package httpx

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
)

// ParseTTL parses an optional Go duration (the API's JSON ttl, the gateway's
// ?ttl= of POST /_idem/tokens); false means it answered 400.
func ParseTTL(ctx *fasthttp.RequestCtx, field, raw string) (time.Duration, bool) {
	if raw == "" {
		return 0, true
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		WriteProblem(ctx, InvalidTTL, fmt.Sprintf("%s: %q is not a positive Go duration (30s, 5m, 24h)", field, raw))
		return 0, false
	}
	if d > command.MaxTTL {
		WriteProblem(ctx, InvalidTTL, fmt.Sprintf("%s: %q is over the limit of %s", field, raw, command.MaxTTL))
		return 0, false
	}
	return d, true
}

// RFC3339 is t as an answer writes it (UTC, nanoseconds), "" for the zero
// time.
func RFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
