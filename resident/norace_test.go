//go:build !race

package resident

const raceEnabled = false
