// Package e2e holds idemgate's end-to-end tests: they build the idemgate
// command from the module root and run it as an operator does (real
// processes on loopback ports, real files), run the shell examples of
// README.md and docs/, and check the files of deploy/ against a running
// node. It holds no code outside its tests.
//
// The tests run from the module root (TestMain changes to it), so they
// name the repository's files as a reader does: README.md, docs/api.md,
// deploy/alerts.yaml. The chaos run needs -tags chaos:
//
//	go test -race -count=1 ./tests/e2e/
//	IDEMGATE_T2=2m go test -tags chaos -count=1 -run TestT2 -v -timeout 15m ./tests/e2e/
package e2e
