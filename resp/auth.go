package resp

import "crypto/sha256"

// Authentication, and its revocation. A connection authenticates once
// (AUTH, HELLO ... AUTH) and keeps what it was granted; a reload that
// removes its token, or takes writing away from it, must reach it too, or
// a revoked token would go on working on every connection opened before.
// So the listener keeps each connection's credential, the SHA-256 of its
// secret (never the secret), and SetAuth checks every open connection's
// again with the new AuthFunc: one whose token is gone or may no longer
// write is closed at once, and runs nothing more. One whose token stays,
// with as much or more, keeps its connection and what it had.

// session is what a connection's AUTH granted; never changed once made.
type session struct {
	sum   [sha256.Size]byte // the secret's SHA-256
	grant Grant
}

// SetAuth replaces who may connect (a reload) and closes every open
// connection whose credential the new fn refuses or grants less (no
// writes where it had them); when it returns, those connections run
// nothing more. nil turns authentication off and closes nothing.
func (s *Server) SetAuth(fn AuthFunc) {
	s.authMu.Lock() // an AUTH under way finishes first, or waits and sees fn
	defer s.authMu.Unlock()
	if fn == nil {
		s.auth.Store(nil)
		return
	}
	s.auth.Store(&fn)
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		sess := c.sess.Load()
		if sess == nil {
			continue
		}
		g, err := fn(sess.sum)
		if err == nil && (g.Write || !sess.grant.Write) && (g.Admin || !sess.grant.Admin) {
			continue
		}
		why := "its token is gone"
		switch {
		case err == nil && sess.grant.Write && !g.Write:
			why = "its token may no longer write"
		case err == nil:
			why = "its token is no longer the admin role's"
		}
		s.logger.Info("resp: a reload revoked a connection's token; closing it", "remote", c.ip, "id", c.id,
			"token", sess.grant.Name, "reason", why)
		c.revoked.Store(true)
		c.nc.Close() // its goroutine's read or write fails, and it ends
	}
}

func (s *Server) authFunc() AuthFunc {
	if p := s.auth.Load(); p != nil {
		return *p
	}
	return nil
}

// authenticate checks a secret; the error reply when it is refused.
func (c *conn) authenticate(user string, secret []byte, passwordOnly bool) string {
	c.s.authMu.RLock()
	defer c.s.authMu.RUnlock()
	fn := c.s.authFunc()
	if fn == nil {
		if passwordOnly {
			return msgNoPassword
		}
		if user != "default" {
			return msgWrongPass
		}
		return "" // the default user has no password: anything goes, as in Redis
	}
	sum := sha256.Sum256(secret)
	g, err := fn(sum)
	if err != nil || (user != "default" && user != g.Name) {
		c.s.logger.Debug("resp: authentication refused", "remote", c.ip, "user", user)
		return msgWrongPass
	}
	c.sess.Store(&session{sum: sum, grant: g})
	return ""
}
