//go:build tools

// Package tools pins modules the project depends on before code imports
// them, so that concurrent work does not race on go.mod. It is never built.
package tools

import (
	_ "github.com/cilium/ebpf"
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/gdamore/tcell/v2"
)
