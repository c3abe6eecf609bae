//go:build race

package resident

// raceEnabled: the race detector slows the sensors' atomics several
// times over, so the hostile tests' rate and stall bounds, which compare
// a monitored subject with an unmonitored twin, do not hold; their
// memory and count bounds still do.
const raceEnabled = true
