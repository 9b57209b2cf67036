// Package version says which build of idemgate this is: the release it was
// built as (set with -ldflags "-X github.com/idemgate/idemgate/version.Release=v1.2.3"),
// else the module version Go recorded (go install …@v1.2.3), else the
// commit it was built from. Every face reports the same string: the
// version command, the API's /v1/status, the Redis face's INFO and HELLO.
package version

import "runtime/debug"

// Release is the release this build was made as; empty for a build from a
// checkout.
var Release = ""

// String is the build's version: the release, the module version, or
// "dev+<commit>" ("dev+<commit>-modified" with uncommitted changes, "dev"
// when Go recorded no commit).
func String() string {
	if Release != "" {
		return Release
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	out := "dev+" + rev[:min(12, len(rev))]
	if modified {
		out += "-modified"
	}
	return out
}
