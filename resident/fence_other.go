//go:build !linux

package resident

func membarrierOK() bool { return false }

func membarrier() {}
