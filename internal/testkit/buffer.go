package testkit

import (
	"fmt"
	"strings"
	"sync"
)

// Buffer keeps what is written to it — a child process's stderr, a
// server's log — for a test to read while writers go on: goroutine-safe.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Logf writes a line, as a log function would.
func (s *Buffer) Logf(format string, args ...any) {
	fmt.Fprintf(s, format+"\n", args...)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
