package httpx

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/storeapi"
)

// TestReservedKeyIs400: the store's refusal of a reserved key is the API's
// 400 invalid-key, wherever it comes from.
func TestReservedKeyIs400(t *testing.T) {
	var ctx fasthttp.RequestCtx
	WriteError(&ctx, fmt.Errorf("kv: %w", storeapi.ErrReservedKey))
	var p Problem
	if err := json.Unmarshal(ctx.Response.Body(), &p); err != nil || ctx.Response.StatusCode() != 400 ||
		p.Type != ProblemBase+"invalid-key" || !strings.Contains(p.Detail, "reserved key") {
		t.Fatalf("WriteError(ErrReservedKey) = %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}
