package fsm

import (
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// Claim returns the claim stored under key (OnceKey); ErrNotFound when
// absent or past its retention.
func (f *FSM) Claim(key []byte, now time.Time) (*command.Claim, error) {
	at := f.readNow(now)
	var out *command.Claim
	err := f.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketOnce).Get(key)
		if v == nil {
			return command.ErrNotFound
		}
		c, err := command.DecodeClaim(v)
		if err != nil {
			return err
		}
		if c.ExpiresAt != 0 && c.ExpiresAt <= at {
			return command.ErrNotFound
		}
		out = c.Clone()
		return nil
	})
	return out, err
}
