package cli

import (
	"fmt"
	"runtime/debug"
)

// Version is what --version prints after the program's name: the module's version, the commit it
// was built from, the commit's time, whether the work tree had changes,
// and the Go version. Every field comes from the build information the Go
// toolchain embeds (debug.ReadBuildInfo); a field the build does not know
// (a binary built by `go run`, or from outside a VCS checkout) says
// "unknown" rather than being left out, so the output's shape is fixed.
func Version(info *debug.BuildInfo, ok bool) string {
	version, commit, when, modified, goVersion := "unknown", "unknown", "unknown", "unknown", "unknown"
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
