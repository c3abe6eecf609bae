// Package cli holds the conventions tqmon's command line keeps that are
// not about monitoring: --version from the build information, man pages,
// completion of flag values, and a did-you-mean for mistyped flags. The
// command (cmd/tqmon) wires them to its cobra tree; each works on any
// cobra tree, so each is tested here on a small one.
package cli
