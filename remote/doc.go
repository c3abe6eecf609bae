// Package remote is the remote monitor: it turns TQuel text into checked,
// planned programs and runs them — over recorded histories now, over packet
// streams from resident monitors as the live work lands — keeping sessions
// of range declarations and derived relations.
package remote
