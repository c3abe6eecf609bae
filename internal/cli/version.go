package cli

import (
	"fmt"
	"runtime/debug"
)

// Stamp is what the linker stamped into a build (the Makefile's
// -ldflags -X): the commit, its time and whether the work tree had
// changes, for builds that carry no VCS information of their own
// (-buildvcs=false, as .ci/run builds, or a tree copied without .git).
type Stamp struct {
	Commit, Time, Modified string
}

// Version is what --version prints after the program's name: the module's version, the commit it
// was built from, the commit's time, whether the work tree had changes,
// and the Go version. The fields come from the build information the Go
// toolchain embeds (debug.ReadBuildInfo), else from the linker's stamp; a
// field neither knows (a binary built by `go run` without the Makefile,
// or from outside a VCS checkout) says "unknown" rather than being left
// out, so the output's shape is fixed.
func Version(info *debug.BuildInfo, ok bool, stamp Stamp) string {
	version, commit, when, modified, goVersion := "unknown", "unknown", "unknown", "unknown", "unknown"
	for _, f := range []struct {
		dst *string
		v   string
	}{{&commit, stamp.Commit}, {&when, stamp.Time}, {&modified, stamp.Modified}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if ok && info != nil {
		if v := info.Main.Version; v != "" {
			version = v
		}
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	return fmt.Sprintf("%s\ncommit:   %s\ntime:     %s\nmodified: %s\ngo:       %s\n", version, commit, when, modified, goVersion)
}
