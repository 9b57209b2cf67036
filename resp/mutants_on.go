//go:build mutants

package resp

// The planted bugs (see mutants.go), settable in this build only.
var (
	mutantNoReadBarrier bool
	mutantTxOneByOne    bool
)
