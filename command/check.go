package command

import "errors"

// The commands' own field rules.

func checkComplete(c *Command) error {
	if c.Status < 100 || c.Status > 999 {
		return errors.New("status out of range")
	}
	return checkFence(c)
}

func checkFence(c *Command) error {
	if c.Fence == 0 {
		return errors.New("missing fencing token")
	}
	return nil
}

func checkOnceBegin(c *Command) error {
	switch {
	case len(c.Value) != 32:
		return errors.New("a payload fingerprint is 32 bytes")
	case c.Timeout <= 0:
		return errors.New("a lease must be positive")
	case c.TTL <= 0:
		return errors.New("a retention must be positive")
	}
	return nil
}

func checkOnceRenew(c *Command) error {
	if c.Timeout <= 0 {
		return errors.New("a lease must be positive")
	}
	return checkFence(c)
}

func checkOnceComplete(c *Command) error {
	if c.TTL <= 0 {
		return errors.New("a retention must be positive")
	}
	return checkFence(c)
}

func checkExpire(c *Command) error {
	for _, e := range c.Entries {
		if !e.Kind.Valid() {
			return errors.New("unknown expiry kind")
		}
	}
	return nil
}

func checkKVSet(c *Command) error {
	switch {
	case c.Mode > SetIfDigestNe:
		return errors.New("unknown set mode")
	case checkCondition(c) != nil:
		return checkCondition(c)
	case c.Flags&^(FlagKeepTTL|FlagReturnOld) != 0:
		return errors.New("unknown set flags")
	case c.Flags&FlagKeepTTL != 0 && c.TTL != 0:
		return errors.New("a lifetime and keep-lifetime together")
	}
	return nil
}

// checkCondition checks a value condition's comparand (Body): none
// without one, 8 bytes for a digest.
func checkCondition(c *Command) error {
	switch c.Mode {
	case SetIfEq, SetIfNe:
	case SetIfDigestEq, SetIfDigestNe:
		if len(c.Body) != 8 {
			return errors.New("a digest condition needs an 8-byte digest")
		}
	default:
		if len(c.Body) != 0 {
			return errors.New("a comparand without a value condition")
		}
	}
	return nil
}

// checkKVDelete: a delete's condition is a version, or a value condition
// (SetIfEq...), not both.
func checkKVDelete(c *Command) error {
	switch {
	case c.Mode != SetPlain && (c.Mode < SetIfEq || c.Mode > SetIfDigestNe):
		return errors.New("a delete's condition is a value condition")
	case c.Mode != SetPlain && c.Version != 0:
		return errors.New("a version and a value condition together")
	}
	return checkCondition(c)
}

func checkKVIncr(c *Command) error {
	if _, ok := ParseInt(c.Value); !ok {
		return errors.New("the increment is not a decimal integer")
	}
	switch lo, hi, ok := IncrBounds(c); {
	case c.Flags&^(FlagIncrMin|FlagIncrMax) != 0:
		return errors.New("unknown increment flags")
	case !ok:
		return errors.New("an increment's bounds are 16 bytes, and only with a bound flag")
	case lo > hi:
		return errors.New("an increment's min is above its max")
	}
	return nil
}

func checkKVExpire(c *Command) error {
	switch {
	case c.Flags&^expireFlags != 0:
		return errors.New("unknown expire flags")
	case c.Flags&FlagExpireNow != 0 && c.TTL != 0:
		return errors.New("a lifetime and expire-now together")
	case c.Flags&FlagExpireNX != 0 && c.Flags&(FlagExpireXX|FlagExpireGT|FlagExpireLT) != 0,
		c.Flags&FlagExpireGT != 0 && c.Flags&FlagExpireLT != 0:
		return errors.New("conflicting expire conditions")
	}
	return nil
}

func checkClusterID(c *Command) error {
	if len(c.Value) != len(ClusterID{}) || ClusterID(c.Value).IsZero() {
		return errors.New("a cluster id is 16 bytes, not all zero")
	}
	return nil
}

func checkMemberRemoved(c *Command) error {
	if len(c.Value)%len(Fingerprint{}) != 0 {
		return errors.New("fingerprints are 32 bytes each")
	}
	return nil
}
