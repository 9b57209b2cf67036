package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Tokens issues and consumes one-shot form tokens (POST /v1/tokens, POST
// /v1/tokens/consume).
type Tokens struct{ c *Client }

// Token is an issued form token.
type Token struct {
	Token     string    `json:"token"`
	Scope     string    `json:"scope"`
	ExpiresAt time.Time `json:"expires_at"`
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// Issue issues a token in scope, valid for ttl (0: the cluster's
// tokens.ttl).
func (t *Tokens) Issue(ctx context.Context, scope string, ttl time.Duration) (Token, error) {
	req := map[string]string{"scope": scope}
	if ttl > 0 {
		req["ttl"] = ttl.String()
	}
	body, _ := json.Marshal(req)
	a, err := t.c.api(ctx, safe, http.MethodPost, "/v1/tokens", jsonHeader.Clone(), body)
	if err != nil {
		return Token{}, err
	}
	if a.status != http.StatusCreated {
		return Token{}, a.errorOf("", 1)
	}
	var tok Token
	if err := json.Unmarshal(a.body, &tok); err != nil {
		return Token{}, fmt.Errorf("client: token issue answer: %w", err)
	}
	return tok, nil
}

// Consume spends token in scope: nil the first time, ErrTokenUsed for
// every later call and for an unknown or expired token.
func (t *Tokens) Consume(ctx context.Context, scope, token string) error {
	body, _ := json.Marshal(map[string]string{"scope": scope, "token": token})
	a, err := t.c.api(ctx, once, http.MethodPost, "/v1/tokens/consume", jsonHeader.Clone(), body)
	if err != nil {
		return err
	}
	switch a.status {
	case http.StatusOK:
		return nil
	case http.StatusConflict:
		e := a.errorOf("", 1)
		e.Type = "token-used"
		return e
	}
	return a.errorOf("", 1)
}
