package transport

import (
	"fmt"
	"net"
	"syscall"
)

// unixPeer names a unix socket's peer by its uid (SO_PEERCRED: the
// credentials the peer connected with, which it cannot change after).
func unixPeer(c *net.UnixConn) (string, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return "", err
	}
	if cerr != nil {
		return "", fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return fmt.Sprintf("uid %d", cred.Uid), nil
}
