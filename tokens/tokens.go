package tokens

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
)

// Errors of token operations.
var (
	// ErrUsed: the token was consumed already, never issued, or expired.
	ErrUsed = errors.New("token already used, unknown or expired")
	// ErrBadScope: the scope is not 1-64 letters, digits, '_', '.', '-'.
	ErrBadScope = errors.New("scope must be 1-64 letters, digits, '_', '.', '-'")
	// ErrBadToken: the token is not a uuid.
	ErrBadToken = errors.New("token must be a uuid")
	// ErrBadTTL: the lifetime is not positive or over MaxTTL.
	ErrBadTTL = errors.New("ttl must be positive and at most 30 days")
)

// MaxTTL bounds a token's lifetime.
const MaxTTL = 30 * 24 * time.Hour

var scopeRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Store is what tokens needs from the replicated store.
type Store interface {
	IssueToken(ctx context.Context, key []byte, ttl time.Duration) (time.Time, error)
	ConsumeToken(ctx context.Context, key []byte) error
}

// Token is an issued token.
type Token struct {
	Value     string
	Scope     string
	ExpiresAt time.Time
}

// Service issues and consumes tokens.
type Service struct {
	store      Store
	defaultTTL time.Duration
	issued     *prometheus.CounterVec
	consumed   *prometheus.CounterVec
	// named are the scopes whose metrics carry their name; every other
	// scope is counted as OtherScope. A scope is chosen by whoever calls
	// POST /v1/tokens: a label per scope as given would let callers grow
	// /metrics without bound (each scope stays in it until restart).
	named map[string]bool
}

// OtherScope is the metric label of every scope not named (SetNamedScopes).
const OtherScope = "other"

// SetNamedScopes sets the scopes the token metrics label by name (the
// cluster file's route scopes); call it before the service is used.
func (s *Service) SetNamedScopes(scopes []string) {
	s.named = map[string]bool{}
	for _, sc := range scopes {
		s.named[sc] = true
		s.initSeries(sc)
	}
}

// consumeResults are the result label's values of the consumed counter.
var consumeResults = []string{"ok", "used"}

// initSeries makes scope's series exist at 0 before its first event, as
// client_golang advises for known label values: an alert on increase()
// sees no first event of a series that does not exist yet.
func (s *Service) initSeries(scope string) {
	s.issued.WithLabelValues(scope)
	for _, r := range consumeResults {
		s.consumed.WithLabelValues(scope, r)
	}
}

// label is scope's metric label.
func (s *Service) label(scope string) string {
	if s.named[scope] {
		return scope
	}
	return OtherScope
}

// New returns a Service; defaultTTL applies when Issue gets ttl 0.
func New(store Store, defaultTTL time.Duration) *Service {
	s := &Service{
		store:      store,
		defaultTTL: defaultTTL,
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_tokens_issued_total", Help: "Form tokens issued, by scope (the routes' scopes; any other is \"other\").",
		}, []string{"scope"}),
		consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_tokens_consumed_total", Help: "Form token consume attempts, by scope and result (ok, used).",
		}, []string{"scope", "result"}),
	}
	s.initSeries(OtherScope)
	return s
}

// DefaultTTL is the lifetime of a token issued without one.
func (s *Service) DefaultTTL() time.Duration { return s.defaultTTL }

// Register registers the token metrics.
func (s *Service) Register(reg prometheus.Registerer) error {
	if err := reg.Register(s.issued); err != nil {
		return err
	}
	return reg.Register(s.consumed)
}

// CheckScope validates a scope.
func CheckScope(scope string) error {
	if !scopeRe.MatchString(scope) {
		return fmt.Errorf("%w: %q", ErrBadScope, scope)
	}
	return nil
}

// Issue creates a token in scope living ttl (0: the default).
func (s *Service) Issue(ctx context.Context, scope string, ttl time.Duration) (Token, error) {
	if err := CheckScope(scope); err != nil {
		return Token{}, err
	}
	if ttl == 0 {
		ttl = s.defaultTTL
	}
	if ttl <= 0 || ttl > MaxTTL {
		return Token{}, ErrBadTTL
	}
	v, err := uuid.NewRandom()
	if err != nil {
		return Token{}, fmt.Errorf("tokens: generate: %w", err)
	}
	tok := Token{Value: v.String(), Scope: scope}
	tok.ExpiresAt, err = s.store.IssueToken(ctx, command.TokenKey(scope, tok.Value), ttl)
	if err != nil {
		return Token{}, fmt.Errorf("issue token: %w", err)
	}
	s.issued.WithLabelValues(s.label(scope)).Inc()
	return tok, nil
}

// Consume spends a token: nil exactly once; ErrUsed afterwards, and for
// unknown or expired tokens.
func (s *Service) Consume(ctx context.Context, scope, token string) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	if err := CheckToken(token); err != nil {
		return err
	}
	err := s.store.ConsumeToken(ctx, command.TokenKey(scope, token))
	switch {
	case err == nil:
		s.consumed.WithLabelValues(s.label(scope), consumeResults[0]).Inc()
		return nil
	case errors.Is(err, command.ErrNotFound):
		s.consumed.WithLabelValues(s.label(scope), consumeResults[1]).Inc()
		return ErrUsed
	}
	return fmt.Errorf("consume token: %w", err)
}

// CheckToken validates a token's format (a uuid, as Issue makes them).
func CheckToken(token string) error {
	if len(token) != 36 {
		return ErrBadToken
	}
	if _, err := uuid.Parse(token); err != nil {
		return ErrBadToken
	}
	return nil
}
