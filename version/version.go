// Package version says which build of idemgate this is: the release it was
// built as, else the module version Go recorded (go install …@v1.2.3), else
// the commit it was built from. A release build (scripts/release.sh) stamps
// the release, its commit and its date with -ldflags:
//
//	-X github.com/idemgate/idemgate/version.Release=v1.2.3
//	-X github.com/idemgate/idemgate/version.Commit=<full commit hash>
//	-X github.com/idemgate/idemgate/version.Date=<commit time, RFC 3339>
//
// Every face reports the same string: the version command, the API's
// /v1/status and /v1/cluster, the Redis face's INFO and HELLO, and the
// idemgate_build_info metric (with the commit).
package version

import "runtime/debug"

// Stamped by the release build; empty for a build from a checkout.
var (
	// Release is the release this build was made as.
	Release = ""
	// Commit is the commit it was built from.
	Commit = ""
	// Date is when that commit was made (the build is reproducible, so
	// not the time of the build).
	Date = ""
)

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
	rev, modified := vcs(bi, "vcs.revision"), vcs(bi, "vcs.modified") == "true"
	if rev == "" {
		return "dev"
	}
	out := "dev+" + rev[:min(12, len(rev))]
	if modified {
		out += "-modified"
	}
	return out
}

// Revision is the commit the build was made from: the stamped Commit, else
// the one Go recorded, else "".
func Revision() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		return vcs(bi, "vcs.revision")
	}
	return ""
}

func vcs(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
