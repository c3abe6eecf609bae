// Package remote is the remote monitor's live side: RunLive runs a
// compiled program (package query) against resident monitors — it checks
// their hellos, tells them what the α operators need enabled (whole
// types, constants, triggers for the rewriter's join restrictions),
// renews their lease, merges their packet streams by watermark into the
// interpreter's live network and streams each result element as it is
// produced. CheckHellos is the check every dial of residents makes.
package remote
