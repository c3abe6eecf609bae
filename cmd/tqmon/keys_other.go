//go:build !linux

package main

import (
	"errors"
	"os"
)

// terminalKeys is available on Linux only; elsewhere a replay is not
// interactive.
func terminalKeys(f *os.File) (<-chan byte, func(), error) {
	return nil, nil, errors.New("interactive keys need Linux")
}
