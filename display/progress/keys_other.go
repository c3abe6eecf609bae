//go:build !linux

package progress

import (
	"errors"
	"os"
)

// Keys is available on Linux only; elsewhere a replay is not
// interactive.
func Keys(f *os.File) (<-chan byte, func(), error) {
	return nil, nil, errors.New("interactive keys need Linux")
}
