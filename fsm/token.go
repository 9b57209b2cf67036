package fsm

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// liveToken returns the token's expiry and whether it exists at now; an
// expired token is deleted on the spot.
func (a *applier) liveToken(tx *bolt.Tx, key []byte) (int64, bool, error) {
	v := tx.Bucket(bucketTokens).Get(key)
	if v == nil {
		return 0, false, nil
	}
	exp := int64(getUint64(v))
	if exp != 0 && exp <= a.now {
		if err := a.deleteToken(tx, key, exp); err != nil {
			return 0, false, err
		}
		a.expiredDelta[ttl.KindToken]++
		return 0, false, nil
	}
	return exp, true, nil
}

func (a *applier) deleteToken(tx *bolt.Tx, key []byte, exp int64) error {
	if exp != 0 {
		if err := deleteExpiry(tx, ttl.KindToken, key, exp); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketTokens).Delete(key)
}

func (a *applier) tokenIssue(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	_, ok, err := a.liveToken(tx, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if ok {
		return &command.Result{Code: command.CodeExists}
	}
	exp := a.expiry(c.TTL)
	if exp != 0 {
		if err := putExpiry(tx, ttl.KindToken, c.Key, exp); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	if err := tx.Bucket(bucketTokens).Put(c.Key, binary.BigEndian.AppendUint64(nil, uint64(exp))); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeCreated, ExpiresAt: exp}
}

// tokenConsume is GETDEL on a token: exactly one consume of a live token
// succeeds.
func (a *applier) tokenConsume(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	exp, ok, err := a.liveToken(tx, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if !ok {
		return &command.Result{Code: command.CodeNotFound}
	}
	if err := a.deleteToken(tx, c.Key, exp); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, ExpiresAt: exp}
}

// The applier's rows of this file's commands (commands.go joins them).
var tokenApplies = applies{
	command.TypeTokenIssue:   {remembered: true, apply: (*applier).tokenIssue},
	command.TypeTokenConsume: {remembered: true, apply: (*applier).tokenConsume},
}
