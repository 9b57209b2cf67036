package auth

import (
	"crypto/sha256"
	"errors"
	"testing"
)

func TestNewAccess(t *testing.T) {
	good := token("a", RoleAdmin, "s")
	tests := []struct {
		name   string
		tokens []Token
		open   []string
		err    error
	}{
		{"one token", []Token{good}, nil, nil},
		{"no tokens", nil, nil, nil},
		{"no name", []Token{{Role: RoleRead, SHA256: sha256.Sum256([]byte("s"))}}, nil, ErrTokenName},
		{"no role", []Token{{Name: "a", SHA256: sha256.Sum256([]byte("s"))}}, nil, ErrUnknownRole},
		{"role out of range", []Token{{Name: "a", Role: RoleAdmin + 1, SHA256: sha256.Sum256([]byte("s"))}}, nil, ErrUnknownRole},
		{"no hash", []Token{{Name: "a", Role: RoleRead}}, nil, ErrTokenHash},
		{"same name twice", []Token{good, token("a", RoleRead, "t")}, nil, ErrTokenDuplicate},
		{"same secret twice", []Token{good, token("b", RoleRead, "s")}, nil, ErrTokenDuplicate},
		{"unknown open endpoint", []Token{good}, []string{"healthz", "cluster"}, ErrUnknownOpen},
		{"open endpoint by path", []Token{good}, []string{"/healthz"}, ErrUnknownOpen},
	}
	for _, tt := range tests {
		_, err := NewAccess(tt.tokens, tt.open)
		if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.err)
		}
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range []Role{RoleRead, RoleApp, RoleAdmin} {
		if got, err := ParseRole(r.String()); got != r || err != nil {
			t.Errorf("ParseRole(%q): got %v %v, want %v", r.String(), got, err, r)
		}
	}
	for _, s := range []string{"", "Admin", "root", "read "} {
		if got, err := ParseRole(s); !errors.Is(err, ErrUnknownRole) {
			t.Errorf("ParseRole(%q): got %v %v, want ErrUnknownRole", s, got, err)
		}
	}
	if got := Role(0).String(); got != "Role(0)" {
		t.Errorf("Role(0).String(): got %q, want Role(0)", got)
	}
}

func token(name string, role Role, secret string) Token {
	return Token{Name: name, Role: role, SHA256: sha256.Sum256([]byte(secret))}
}

// TestMatch: a secret finds its token by its hash, or its hash directly
// (Authenticate); a secret of no token, an empty one, a token's hash sent as
// the secret and a near miss find none. Open is only what NewAccess opened.
func TestMatch(t *testing.T) {
	ac, err := NewAccess([]Token{token("reader", RoleRead, "r3ad"), token("admin", RoleAdmin, "adm1n")}, []string{"healthz"})
	if err != nil {
		t.Fatal(err)
	}
	adminSum := sha256.Sum256([]byte("adm1n"))
	for _, tt := range []struct {
		secret string
		name   string // "" when no token matches
	}{
		{"r3ad", "reader"}, {"adm1n", "admin"},
		{"", ""}, {"adm1n ", ""}, {"ADM1N", ""}, {"adm1", ""}, {string(adminSum[:]), ""},
	} {
		got, err := ac.Match([]byte(tt.secret))
		if got.Name != tt.name || (tt.name == "") != errors.Is(err, ErrUnknownToken) {
			t.Errorf("Match(%q) = %q, %v; want %q", tt.secret, got.Name, err, tt.name)
		}
	}
	if name, role, err := ac.Authenticate(adminSum); name != "admin" || role != RoleAdmin || err != nil {
		t.Errorf("Authenticate(admin's hash) = %q %v %v", name, role, err)
	}
	if _, _, err := ac.Authenticate([32]byte{}); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("Authenticate(zero hash) = %v, want ErrUnknownToken", err)
	}
	if !ac.Open("/healthz") || ac.Open("/readyz") || ac.Open("/metrics") || ac.Open("healthz") {
		t.Error("Open does not follow NewAccess's open list")
	}
}
