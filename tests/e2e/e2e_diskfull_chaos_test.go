//go:build chaos

package e2e

// The chaos build's TestE2EDiskFullStop runs 60 rounds (about seven
// minutes): enough to catch a race one round in fifteen loses.
//
//	go test -tags chaos -count=1 -run TestE2EDiskFullStop -v -timeout 20m ./tests/e2e/
func init() { diskFullRounds = 60 }
